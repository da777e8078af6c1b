import type { ContentService } from '@svc/content';
import type { Overlay } from '@svc/protocol';
import type { Tenant } from '@svc/storage';
import type { TenantService } from '@svc/tenancy';

export const DEMO_BROADCAST_ID = 'demo-live';
/** How long each overlay of the scripted demo stays on screen. */
export const DEMO_STEP_MS = 12_000;

const DEMO_OVERLAYS: unknown[] = [
  { type: 'poll', question: 'Who takes the title tonight?', options: ['Lions', 'Falcons', 'Too close to call'] },
  { type: 'lineup', items: [{ title: 'Warm-up show' }, { title: 'Kick-off: Lions vs Falcons' }, { title: 'Half-time: fan cam' }, { title: 'Trophy ceremony' }] },
  { type: 'sponsor_moment', sponsorId: 'acme', message: 'Half-time is brought to you by Acme Sports: 20% off all jerseys tonight.', ctaUrl: 'https://example.com/acme', durationMs: 12_000 },
  { type: 'contest', title: 'Win a signed jersey', description: 'Enter now; the winner is drawn at the final whistle.' },
  { type: 'product', name: 'Lions home jersey', price: 79.9, currency: 'EUR', placement: 'carousel', sponsorId: 'acme', productId: 'jersey-lions' },
  { type: 'product', name: 'Falcons scarf', price: 24.5, currency: 'EUR', placement: 'carousel', sponsorId: 'acme', productId: 'scarf-falcons' },
];

/**
 * The scripted demo of tenant `demo`: one broadcast whose overlays appear in turn, so that a
 * newcomer sees the whole product at /demo within a minute.
 */
export class DemoBroadcast {
  private timer: NodeJS.Timeout | null = null;
  private step = 0;
  private overlays: Overlay[] = [];
  private readonly stepMs: number;

  /** `stepMs`: how long each overlay stays on screen (default `DEMO_STEP_MS`); tests shorten it. */
  constructor(
    private readonly content: ContentService,
    private readonly tenants: TenantService,
    options: { stepMs?: number } = {},
  ) {
    this.stepMs = options.stepMs ?? DEMO_STEP_MS;
  }

  async start(): Promise<void> {
    const tenant = await this.tenants.getTenant('demo').catch(() => null);
    if (!tenant) return;
    const ready = await this.prepare(tenant);
    this.timer = setInterval(() => void this.next(ready).catch(() => undefined), this.stepMs);
    this.timer.unref();
    await this.next(ready);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private async prepare(tenant: Tenant): Promise<Tenant> {
    // The demo viewer is placed in a market, so that product cards show.
    if (!tenant.settings.fallbackCountry) tenant = await this.tenants.updateSettings(tenant, { fallbackCountry: 'DE' });
    await this.content.createSponsor(tenant, { id: 'acme', name: 'Acme Sports' }).catch(() => undefined);
    await this.content.createBroadcast(tenant, { id: DEMO_BROADCAST_ID, campaignId: tenant.settings.defaultCampaignId, title: 'Demo: Finals Night' }).catch(() => undefined);
    this.overlays = await this.content.listOverlays(tenant, DEMO_BROADCAST_ID);
    if (!this.overlays.length) {
      for (const body of DEMO_OVERLAYS) this.overlays.push(await this.content.createOverlay(tenant, DEMO_BROADCAST_ID, body));
    }
    return tenant;
  }

  /** Shows the next overlay (products come as a pair) and hides the others. */
  private async next(tenant: Tenant): Promise<void> {
    const groups: Overlay[][] = [];
    for (const overlay of this.overlays) {
      const last = groups[groups.length - 1];
      if (overlay.type === 'product' && last?.[0]?.type === 'product') last.push(overlay);
      else groups.push([overlay]);
    }
    if (!groups.length) return;
    const current = groups[this.step % groups.length]!;
    this.step++;
    // Hides first, then shows: the previous step never stays on screen with the next one.
    for (const overlay of [...this.overlays].sort((a, b) => Number(current.includes(a)) - Number(current.includes(b)))) {
      const show = current.includes(overlay);
      await this.content.setActive(tenant, DEMO_BROADCAST_ID, overlay.id, show);
    }
  }
}

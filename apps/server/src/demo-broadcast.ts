import type { ContentService } from '@svc/content';
import type { Overlay } from '@svc/protocol';
import type { Tenant } from '@svc/storage';
import type { TenantService } from '@svc/tenancy';

export const DEMO_BROADCAST_ID = 'demo-live';
/** How long each scene of the scripted demo stays on screen. */
export const DEMO_STEP_MS = 20_000;
/**
 * Polls and contests close this far into their scene, so the closed state shows too, and a
 * viewer with the demo's 8 s latency still has time to vote.
 */
const CLOSE_AFTER_SHARE = 0.85;
const MINUTE_MS = 60_000;

/** An overlay of the script: its body, given the time it is shown and where the pictures are. */
interface Part {
  key: string;
  body: (nowMs: number, base: string, stepMs: number) => Record<string, unknown>;
}

const PARTS: Part[] = [
  { key: 'poll', body: (now, _base, step) => ({ type: 'poll', question: 'Who takes the title tonight?', options: ['Lions', 'Falcons', 'Too close to call'], closesAt: new Date(now + step * CLOSE_AFTER_SHARE).toISOString() }) },
  { key: 'moment', body: (_now, base) => ({ type: 'sponsor_moment', sponsorId: 'acme', message: 'Half-time is brought to you by Acme Sports: 20% off all jerseys tonight.', ctaUrl: 'https://example.com/acme', imageUrl: `${base}/demo/images/acme-logo.svg` }) },
  {
    key: 'lineup',
    body: (now) => ({
      type: 'lineup',
      items: [
        { title: 'Warm-up show', at: new Date(now - 20 * MINUTE_MS).toISOString() },
        { title: 'Kick-off: Lions vs Falcons', at: new Date(now - MINUTE_MS).toISOString() },
        { title: 'Half-time: fan cam', at: new Date(now + 45 * MINUTE_MS).toISOString() },
        { title: 'Trophy ceremony', at: new Date(now + 110 * MINUTE_MS).toISOString() },
      ],
    }),
  },
  { key: 'contest', body: (now, _base, step) => ({ type: 'contest', title: 'Win a signed jersey', description: 'Enter now; the winner is drawn at the final whistle.', closesAt: new Date(now + step * CLOSE_AFTER_SHARE).toISOString() }) },
  ...[
    ['jersey-lions', 'Lions home jersey', 79.9],
    ['scarf-falcons', 'Falcons scarf', 24.5],
    ['ball-signed', 'Signed match ball', 149],
  ].map(([id, name, price]) => ({
    key: String(id),
    body: (_now: number, base: string) => ({ type: 'product', name, price, currency: 'EUR', placement: 'carousel', sponsorId: 'acme', productId: id, imageUrl: `${base}/demo/images/${id}.svg` }),
  })),
];

/** What is on screen together, in turn: each scene shows a different part of the layout. */
export const DEMO_SCENES: string[][] = [
  ['poll', 'moment'],
  ['lineup', 'jersey-lions', 'scarf-falcons', 'ball-signed'],
  ['contest', 'jersey-lions', 'scarf-falcons', 'ball-signed'],
];

/** The text that tells a part's overlay apart from the others (stable across the times in it). */
function identity(body: Record<string, unknown>): string {
  return `${String(body.type)}:${String(body.question ?? body.title ?? body.name ?? body.message ?? '')}`;
}

/**
 * The scripted demo of tenant `demo`: one broadcast whose scenes appear in turn, so that a
 * newcomer sees the whole product at /demo in a minute. Times (countdowns, the lineup)
 * and picture addresses are brought up to date each time a part is shown.
 */
export class DemoBroadcast {
  private timer: NodeJS.Timeout | null = null;
  private step = 0;
  private readonly byKey = new Map<string, Overlay>();
  private readonly stepMs: number;
  private readonly baseUrl: () => string;

  /**
   * `stepMs`: how long each scene stays on screen (default `DEMO_STEP_MS`); tests shorten it.
   * `baseUrl`: where this service is published, for the pictures (read at each show).
   */
  constructor(
    private readonly content: ContentService,
    private readonly tenants: TenantService,
    options: { stepMs?: number; baseUrl?: () => string } = {},
  ) {
    this.stepMs = options.stepMs ?? DEMO_STEP_MS;
    this.baseUrl = options.baseUrl ?? (() => 'http://localhost:8080');
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
    const logoUrl = `${this.baseUrl()}/demo/images/acme-logo.svg`;
    await this.content.createSponsor(tenant, { id: 'acme', name: 'Acme Sports', logoUrl }).catch(() => this.content.updateSponsor(tenant, 'acme', { logoUrl }));
    await this.content.createBroadcast(tenant, { id: DEMO_BROADCAST_ID, campaignId: tenant.settings.defaultCampaignId, title: 'Demo: Finals Night' }).catch(() => undefined);
    // Overlays of an earlier script stay (hidden); the parts of this one are found or made.
    const existing = await this.content.listOverlays(tenant, DEMO_BROADCAST_ID);
    const now = Date.now();
    for (const part of PARTS) {
      const body = part.body(now, this.baseUrl(), this.stepMs);
      const found = existing.find((o) => identity(o as unknown as Record<string, unknown>) === identity(body));
      this.byKey.set(part.key, found ?? (await this.content.createOverlay(tenant, DEMO_BROADCAST_ID, body)));
    }
    return tenant;
  }

  /** Hides what is on screen, brings the next scene's parts up to date, then shows them. */
  private async next(tenant: Tenant): Promise<void> {
    const scene = DEMO_SCENES[this.step % DEMO_SCENES.length]!;
    this.step++;
    const showing = new Set(scene.map((key) => this.byKey.get(key)!.id));
    const others = (await this.content.listOverlays(tenant, DEMO_BROADCAST_ID)).filter((o) => o.active && !showing.has(o.id));
    // Hides first, then shows: the previous scene never stays on screen with the next one.
    for (const overlay of others) await this.content.setActive(tenant, DEMO_BROADCAST_ID, overlay.id, false);
    const now = Date.now();
    for (const key of scene) {
      const part = PARTS.find((p) => p.key === key)!;
      const { type: _type, ...body } = part.body(now, this.baseUrl(), this.stepMs);
      const overlay = await this.content.updateOverlay(tenant, DEMO_BROADCAST_ID, this.byKey.get(key)!.id, body);
      await this.content.setActive(tenant, DEMO_BROADCAST_ID, overlay.id, true);
    }
  }
}

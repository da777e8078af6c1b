import { systemClock, type Clock } from '@svc/protocol';
import type { EventStore, MetaStore } from '@svc/storage';
import { subtractMonths } from './calendar';

/** How often retention is enforced. */
export const PURGE_INTERVAL_MS = 60 * 60 * 1000;
/** Quarantined rejects (and, later, webhook delivery logs) are kept this long. */
export const SHORT_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

export interface PurgeReport {
  events: number;
  rejects: number;
  deliveries: number;
}

export interface PurgeObserver {
  purged(report: PurgeReport): void;
  failed(error: unknown): void;
}

/**
 * Enforces retention: events whose time is older than their tenant's `retentionMonths`
 * (calendar months, UTC) are removed, and quarantined rejects after 30 days. Runs at start
 * and then hourly; the clock is injected so tests move time instead of waiting.
 */
export class RetentionPurger {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<PurgeReport> | null = null;

  constructor(
    private readonly meta: MetaStore,
    private readonly events: EventStore,
    private readonly clock: Clock = systemClock,
    private readonly observer: PurgeObserver = { purged: () => {}, failed: () => {} },
    /** Removes webhook delivery logs past their 30 days; returns how many. */
    private readonly purgeDeliveryLogs: () => Promise<number> = async () => 0,
  ) {}

  /** One pass over every tenant; concurrent calls share the pass in progress. */
  runOnce(): Promise<PurgeReport> {
    this.running ??= this.purge().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  start(intervalMs: number = PURGE_INTERVAL_MS): void {
    if (this.timer) return;
    const tick = () => void this.runOnce().then((report) => this.observer.purged(report), (error) => this.observer.failed(error));
    tick();
    this.timer = setInterval(tick, intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running?.catch(() => undefined);
  }

  private async purge(): Promise<PurgeReport> {
    const now = this.clock.now();
    let events = 0;
    for (const tenant of await this.meta.listTenants()) {
      events += await this.events.purgeEventsBefore(tenant.seq, subtractMonths(now, tenant.retentionMonths));
    }
    const rejects = await this.events.purgeRejectedBefore(now - SHORT_RETENTION_MS);
    const deliveries = await this.purgeDeliveryLogs();
    return { events, rejects, deliveries };
  }
}

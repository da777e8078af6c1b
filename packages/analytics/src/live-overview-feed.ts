import type { Bus } from '@svc/protocol';
import type { Tenant } from '@svc/storage';
import type { AnalyticsService, OverviewFilter } from './analytics-service';

/** How often a live watcher checks for news; panels follow an accepted event within this. */
export const LIVE_TICK_MS = 250;

/** What a watcher is sent: every panel, or the live viewer count alone when only it changed. */
export type LiveUpdate = { event: 'overview'; data: Awaited<ReturnType<AnalyticsService['overview']>> } | { event: 'viewers'; data: { live: number } };

export interface LiveWatcher {
  tenant: Tenant;
  filter: OverviewFilter;
  send(update: LiveUpdate): void;
  /** Whether the watcher went away meanwhile (nothing more is computed for it). */
  gone(): boolean;
  failed(error: unknown): void;
}

/**
 * The dashboard's live mode: each watcher is sent `overview` (all panels) at once and again
 * within a tick of any `events.stored` of its tenant, or as soon as the one in progress is
 * sent; and `viewers` whenever the live count changes in between.
 */
export class LiveOverviewFeed {
  private readonly dirtyMarks = new Map<number, Set<() => void>>();
  private readonly stops = new Set<() => void>();
  private readonly unsubscribe: () => void;

  constructor(
    bus: Bus,
    private readonly analytics: AnalyticsService,
    /** Default `LIVE_TICK_MS`. */
    private readonly tickMs: number = LIVE_TICK_MS,
  ) {
    this.unsubscribe = bus.subscribe('events.stored', ({ tenantSeq }) => {
      for (const markDirty of this.dirtyMarks.get(tenantSeq) ?? []) markDirty();
    });
  }

  /** Starts sending `watcher` its updates; returns the function that stops them. */
  watch(watcher: LiveWatcher): () => void {
    const { tenant, filter } = watcher;
    let dirty = true;
    let busy = false;
    let lastLive = -1;
    const markDirty = () => (dirty = true);
    let forTenant = this.dirtyMarks.get(tenant.seq);
    if (!forTenant) this.dirtyMarks.set(tenant.seq, (forTenant = new Set()));
    forTenant.add(markDirty);
    const tick = async () => {
      if (busy || watcher.gone()) return;
      busy = true;
      try {
        if (dirty) {
          dirty = false;
          const overview = await this.analytics.overview(tenant, filter);
          lastLive = overview.viewers.live;
          watcher.send({ event: 'overview', data: overview });
        } else {
          const live = await this.analytics.liveCount(tenant, filter);
          if (live !== lastLive) {
            lastLive = live;
            watcher.send({ event: 'viewers', data: { live } });
          }
        }
      } catch (error) {
        watcher.failed(error);
      } finally {
        busy = false;
      }
      // Events that came in meanwhile are sent at once, not a tick later.
      if (dirty && !watcher.gone()) void tick();
    };
    const timer = setInterval(() => void tick(), this.tickMs);
    const stop = () => {
      clearInterval(timer);
      forTenant.delete(markDirty);
      if (!forTenant.size && this.dirtyMarks.get(tenant.seq) === forTenant) this.dirtyMarks.delete(tenant.seq);
      this.stops.delete(stop);
    };
    this.stops.add(stop);
    void tick();
    return stop;
  }

  /** Stops every watcher and leaves the bus. */
  close(): void {
    for (const stop of [...this.stops]) stop();
    this.unsubscribe();
  }
}

import { afterEach, describe, expect, it, vi } from 'vitest';
import { LocalBus, type Bus } from '@svc/protocol';
import type { Tenant } from '@svc/storage';
import type { AnalyticsService } from '../src/analytics-service';
import { LiveOverviewFeed, type LiveUpdate } from '../src/live-overview-feed';

const TICK_MS = 10;
const tenant = (seq: number) => ({ seq }) as Tenant;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Analytics whose overview is numbered by call, with a live count the test sets. */
class FakeAnalytics {
  overviews = 0;
  live = 0;
  async overview() {
    return { n: ++this.overviews, viewers: { live: this.live } };
  }
  async liveCount() {
    return this.live;
  }
}

describe('LiveOverviewFeed', () => {
  let feed: LiveOverviewFeed;
  afterEach(() => feed.close());

  const watch = (seq: number) => {
    const updates: LiveUpdate[] = [];
    const stop = feed.watch({ tenant: tenant(seq), filter: {}, send: (update) => updates.push(update), gone: () => false, failed: () => {} });
    return { updates, stop };
  };

  it('sends the overview at once, and again within a tick of events stored for its tenant only', async () => {
    const bus = new LocalBus();
    const analytics = new FakeAnalytics();
    feed = new LiveOverviewFeed(bus, analytics as unknown as AnalyticsService, TICK_MS);
    const mine = watch(1);
    const other = watch(2);
    await vi.waitFor(() => expect([mine.updates.length, other.updates.length]).toEqual([1, 1]));
    await sleep(5 * TICK_MS);
    expect(mine.updates).toHaveLength(1);
    await bus.publish('events.stored', { tenantSeq: 1 });
    await vi.waitFor(() => expect(mine.updates).toHaveLength(2));
    expect(mine.updates[1]).toMatchObject({ event: 'overview' });
    await sleep(5 * TICK_MS);
    expect(other.updates).toHaveLength(1);
  });

  it('sends the live viewer count alone when only it changed', async () => {
    const analytics = new FakeAnalytics();
    feed = new LiveOverviewFeed(new LocalBus(), analytics as unknown as AnalyticsService, TICK_MS);
    const { updates } = watch(1);
    await vi.waitFor(() => expect(updates).toHaveLength(1));
    analytics.live = 3;
    await vi.waitFor(() => expect(updates).toHaveLength(2));
    expect(updates[1]).toEqual({ event: 'viewers', data: { live: 3 } });
    expect(analytics.overviews).toBe(1);
  });

  it('sends nothing more to a watcher that stopped, nor to any once the feed closed, and then leaves the bus', async () => {
    const local = new LocalBus();
    let subscriptions = 0;
    const bus: Bus = {
      publish: (topic, payload) => local.publish(topic, payload),
      subscribe: (topic, handler) => {
        subscriptions++;
        const end = local.subscribe(topic, handler);
        return () => {
          subscriptions--;
          end();
        };
      },
    };
    const analytics = new FakeAnalytics();
    feed = new LiveOverviewFeed(bus, analytics as unknown as AnalyticsService, TICK_MS);
    const stopped = watch(1);
    const kept = watch(1);
    await vi.waitFor(() => expect([stopped.updates.length, kept.updates.length]).toEqual([1, 1]));
    stopped.stop();
    await bus.publish('events.stored', { tenantSeq: 1 });
    await vi.waitFor(() => expect(kept.updates).toHaveLength(2));
    feed.close();
    await bus.publish('events.stored', { tenantSeq: 1 });
    analytics.live = 5;
    await sleep(5 * TICK_MS);
    expect([stopped.updates.length, kept.updates.length]).toEqual([1, 2]);
    expect(subscriptions).toBe(0);
  });
});

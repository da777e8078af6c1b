import { LocalBus, ManualClock, type NodeViewerCounts } from '@svc/protocol';
import { describe, expect, it } from 'vitest';
import { ClusterViewerCounts, type RoomCount } from '../src';
import { ManualTimers } from './gateway-harness';

const INTERVAL_MS = 1_000;

/** Two nodes' counts on one bus (LocalBus: both hear every message, as on NATS). */
function twoNodes() {
  const bus = new LocalBus();
  const clock = new ManualClock(0);
  const timers = new ManualTimers(clock);
  const here: Record<'a' | 'b', RoomCount[]> = { a: [], b: [] };
  const changed: Record<'a' | 'b', string[]> = { a: [], b: [] };
  const node = (name: 'a' | 'b') =>
    new ClusterViewerCounts({
      bus,
      timers,
      clock,
      node: name,
      intervalMs: INTERVAL_MS,
      countsHere: () => here[name],
      changed: (tenantSeq, broadcastId) => void changed[name].push(`${tenantSeq}/${broadcastId}`),
    });
  return { bus, clock, timers, here, changed, a: node('a'), b: node('b') };
}

const room = (broadcastId: string, viewers: number, tenantSeq = 1): RoomCount => ({ tenantSeq, broadcastId, campaignId: 1, viewers });

describe('viewer counts across nodes', () => {
  it("adds the other nodes' latest counts, not its own, and tells which broadcasts changed", () => {
    const { timers, here, changed, a, b } = twoNodes();
    here.a = [room('final', 3)];
    here.b = [room('final', 2), room('other', 5), room('final', 7, 2)];
    timers.advance(INTERVAL_MS);
    expect([a.elsewhere(1, 'final'), b.elsewhere(1, 'final')]).toEqual([2, 3]);
    expect([a.elsewhere(1, 'other'), a.elsewhere(2, 'final'), a.elsewhere(1, 'nowhere')]).toEqual([5, 7, 0]);
    expect(a.elsewhereOf(1)).toEqual([room('final', 2), room('other', 5)]);
    expect(changed.a.sort()).toEqual(['1/final', '1/other', '2/final']);
    changed.a.length = 0;
    // Unchanged counts tell nothing; a broadcast no longer listed has no viewers there any more.
    timers.advance(INTERVAL_MS);
    expect(changed.a).toEqual([]);
    here.b = [room('final', 4)];
    timers.advance(INTERVAL_MS);
    expect([a.elsewhere(1, 'final'), a.elsewhere(1, 'other')]).toEqual([4, 0]);
    expect(changed.a.sort()).toEqual(['1/final', '1/other', '2/final']);
  });

  it('stops counting a node that vanished within two of its intervals', () => {
    const { timers, here, changed, a, b } = twoNodes();
    here.b = [room('final', 2)];
    timers.advance(INTERVAL_MS);
    expect(a.elsewhere(1, 'final')).toBe(2);
    b.stop();
    changed.a.length = 0;
    timers.advance(2 * INTERVAL_MS - 1);
    expect(a.elsewhere(1, 'final')).toBe(2);
    timers.advance(1);
    expect(a.elsewhere(1, 'final')).toBe(0);
    expect(changed.a).toEqual(['1/final']);
  });

  it('publishes one message per node and interval, whatever the number of viewers', () => {
    const { bus, timers, here } = twoNodes();
    const sent: NodeViewerCounts[] = [];
    bus.subscribe('viewers.counted', (counts) => void sent.push(counts));
    here.a = [room('final', 100_000)];
    timers.advance(3 * INTERVAL_MS);
    expect(sent.filter((m) => m.node === 'a')).toHaveLength(3);
    expect(sent.filter((m) => m.node === 'b')).toHaveLength(3);
    expect(sent.at(-2)).toEqual({ node: 'a', intervalMs: INTERVAL_MS, rooms: [room('final', 100_000)] });
  });

  it('tells how long another node has been gone: 0 while it counts, then the time since its counts expired; null for one never heard of', () => {
    const { timers, a, b } = twoNodes();
    timers.advance(INTERVAL_MS);
    expect([a.silentForMs('b'), a.silentForMs('a'), a.silentForMs('z')]).toEqual([0, 0, null]);
    b.stop();
    timers.advance(2 * INTERVAL_MS - 1);
    expect(a.silentForMs('b')).toBe(0);
    timers.advance(1);
    expect(a.silentForMs('b')).toBe(0);
    timers.advance(5_000);
    expect(a.silentForMs('b')).toBe(5_000);
  });
});

import { LocalBus, ManualClock, type Bus, type BusTopic, type BusTopics, type NodeViewerCounts } from '@svc/protocol';
import { describe, expect, it } from 'vitest';
import { ClusterViewerCounts, MAX_PEER_INTERVAL_MS, MIN_PEER_INTERVAL_MS, type RoomCount } from '../src';
import { ManualTimers } from './gateway-harness';

const INTERVAL_MS = 1_000;

/**
 * Two nodes' counts on one bus (LocalBus: both hear every message, as on NATS). `crash(name)`
 * cuts a node off the bus without its clean stop: what it publishes from then on reaches nobody.
 */
function twoNodes() {
  const bus = new LocalBus();
  const clock = new ManualClock(0);
  const timers = new ManualTimers(clock);
  const here: Record<'a' | 'b', RoomCount[]> = { a: [], b: [] };
  const changed: Record<'a' | 'b', string[]> = { a: [], b: [] };
  const crashed = new Set<'a' | 'b'>();
  const linkOf = (name: 'a' | 'b'): Bus => ({
    publish: <T extends BusTopic>(topic: T, payload: BusTopics[T]) => (crashed.has(name) ? Promise.resolve() : bus.publish(topic, payload)),
    subscribe: (topic, handler) => bus.subscribe(topic, handler),
  });
  const node = (name: 'a' | 'b') =>
    new ClusterViewerCounts({
      bus: linkOf(name),
      timers,
      clock,
      node: name,
      intervalMs: INTERVAL_MS,
      countsHere: () => here[name],
      changed: (tenantSeq, broadcastId) => void changed[name].push(`${tenantSeq}/${broadcastId}`),
    });
  return { bus, clock, timers, here, changed, crash: (name: 'a' | 'b') => crashed.add(name), a: node('a'), b: node('b') };
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
    const { timers, here, changed, crash, a } = twoNodes();
    here.b = [room('final', 2)];
    timers.advance(INTERVAL_MS);
    expect(a.elsewhere(1, 'final')).toBe(2);
    crash('b');
    changed.a.length = 0;
    timers.advance(2 * INTERVAL_MS - 1);
    expect(a.elsewhere(1, 'final')).toBe(2);
    timers.advance(1);
    expect(a.elsewhere(1, 'final')).toBe(0);
    expect(changed.a).toEqual(['1/final']);
  });

  it('stops counting at once a node that stops cleanly', () => {
    const { timers, here, changed, a, b } = twoNodes();
    here.b = [room('final', 2)];
    timers.advance(INTERVAL_MS);
    expect(a.elsewhere(1, 'final')).toBe(2);
    changed.a.length = 0;
    b.stop();
    expect(a.elsewhere(1, 'final')).toBe(0);
    expect(a.elsewhereOf(1)).toEqual([]);
    expect(changed.a).toEqual(['1/final']);
  });

  it("bounds the interval a peer announces: its counts neither live forever nor expire between its messages", () => {
    const { bus, timers, a } = twoNodes();
    bus.publish('viewers.counted', { node: 'forever', intervalMs: 1e12, rooms: [room('final', 5)] });
    bus.publish('viewers.counted', { node: 'hasty', intervalMs: 1, rooms: [room('final', 7)] });
    expect(a.elsewhere(1, 'final')).toBe(12);
    // Two intervals of 100 ms at least: the hasty node's counts outlive a late message of a few ms.
    timers.advance(2 * MIN_PEER_INTERVAL_MS - 1);
    expect(a.elsewhere(1, 'final')).toBe(12);
    timers.advance(1);
    expect(a.elsewhere(1, 'final')).toBe(5);
    // Two intervals of 60 s at most.
    timers.advance(2 * MAX_PEER_INTERVAL_MS - 2 * MIN_PEER_INTERVAL_MS - 1);
    expect(a.elsewhere(1, 'final')).toBe(5);
    timers.advance(1);
    expect(a.elsewhere(1, 'final')).toBe(0);
  });

  it("adds the other nodes' open sockets per tenant and per heavy address, and their viewers by country", () => {
    const { bus, a } = twoNodes();
    const sockets = (tenantConnections: number, addressConnections: number) => ({
      tenants: [{ tenantSeq: 1, connections: tenantConnections }],
      addresses: [{ address: 'hash-x', connections: addressConnections }],
      tenantAddresses: [{ tenantSeq: 1, address: 'hash-x', connections: addressConnections - 1 }],
    });
    const withCountries = (viewers: number, fr: number, de: number): RoomCount => ({ ...room('final', viewers), countries: [['FR', fr], ['DE', de]] });
    bus.publish('viewers.counted', { node: 'c', intervalMs: INTERVAL_MS, rooms: [withCountries(10, 6, 3), room('other', 4)], sockets: sockets(14, 5) });
    bus.publish('viewers.counted', { node: 'd', intervalMs: INTERVAL_MS, rooms: [withCountries(5, 1, 2)], sockets: sockets(6, 3) });
    expect(a.connectionsElsewhere(1)).toBe(20);
    expect(a.connectionsElsewhere(2)).toBe(0);
    expect([a.addressElsewhere('hash-x'), a.addressElsewhere('hash-y')]).toEqual([8, 0]);
    expect([a.tenantAddressElsewhere(1, 'hash-x'), a.tenantAddressElsewhere(2, 'hash-x')]).toEqual([6, 0]);
    expect(a.elsewhereOfCountry(1, 'FR')).toEqual([room('final', 7)]);
    expect(a.elsewhereOfCountry(1, 'DE')).toEqual([room('final', 5)]);
    expect([a.elsewhereOfCountry(1, 'IT'), a.elsewhereOfCountry(2, 'FR')]).toEqual([[], []]);
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

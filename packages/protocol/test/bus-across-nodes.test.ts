import { describe, expect, it } from 'vitest';
import { BUS_TOPICS_ACROSS_NODES, MAX_COUNTRIES_PER_ROOM_COUNT, MAX_HEAVY_ADDRESSES, type NodeViewerCounts } from '../src';

const check = BUS_TOPICS_ACROSS_NODES['viewers.counted']!;

const counts = (): NodeViewerCounts => ({
  node: 'n1',
  intervalMs: 1_000,
  rooms: [{ tenantSeq: 1, broadcastId: 'final', campaignId: 1, viewers: 5, countries: [['FR', 3]] }],
  sockets: {
    tenants: [{ tenantSeq: 1, connections: 6 }],
    addresses: [{ address: 'hash', connections: 6 }],
    tenantAddresses: [{ tenantSeq: 1, address: 'hash', connections: 6 }],
  },
});

describe('viewers.counted from another node', () => {
  it('takes counts with countries and open sockets, and those of a node of an older version without them', () => {
    expect(check(counts())).toBe(true);
    const { sockets: _sockets, ...older } = counts();
    expect(check({ ...older, rooms: [{ tenantSeq: 1, broadcastId: 'final', campaignId: 1, viewers: 5 }] })).toBe(true);
  });

  it('drops counts whose countries or heavy addresses are malformed or beyond their bounds', () => {
    const country = (i: number): [string, number] => [`C${i}`, 1];
    const address = (i: number) => ({ address: `h${i}`, connections: 1 });
    const tooManyCountries = counts();
    tooManyCountries.rooms[0]!.countries = Array.from({ length: MAX_COUNTRIES_PER_ROOM_COUNT + 1 }, (_, i) => country(i));
    expect(check(tooManyCountries)).toBe(false);
    const tooManyAddresses = counts();
    tooManyAddresses.sockets!.addresses = Array.from({ length: MAX_HEAVY_ADDRESSES + 1 }, (_, i) => address(i));
    expect(check(tooManyAddresses)).toBe(false);
    expect(check({ ...counts(), sockets: { tenants: [{ tenantSeq: 1, connections: -1 }], addresses: [], tenantAddresses: [] } })).toBe(false);
    expect(check({ ...counts(), sockets: { tenants: [], addresses: [{ address: 7, connections: 1 }], tenantAddresses: [] } })).toBe(false);
    expect(check({ ...counts(), sockets: { tenants: [] } })).toBe(false);
    expect(check({ ...counts(), rooms: [{ tenantSeq: 1, broadcastId: 'final', campaignId: 1, viewers: 5, countries: [[null, 1]] }] })).toBe(false);
  });
});

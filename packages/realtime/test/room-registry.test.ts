import { describe, expect, it } from 'vitest';
import { MAX_COUNTRIES_PER_ROOM_COUNT, systemClock } from '@svc/protocol';
import type { ContentStore, InteractionStore, Tenant } from '@svc/storage';
import type { Connection } from '../src/connection';
import { RoomRegistry } from '../src/room-registry';
import { realTimers } from '../src/throttle';

const tenant = { seq: 1 } as Tenant;

function registry(): RoomRegistry {
  return new RoomRegistry(
    {
      campaignOf: async () => 1,
      content: { listOverlays: async () => [], getSponsor: async () => null } as unknown as ContentStore,
      interactions: { listInteractions: async () => [] } as unknown as InteractionStore,
    },
    100,
    systemClock,
    realTimers,
  );
}

describe('RoomRegistry', () => {
  it('keeps the newer room of a broadcast when an older one is released again', async () => {
    const rooms = registry();
    const first = await rooms.open(tenant, 'k');
    rooms.release(first);
    const second = await rooms.open(tenant, 'k');
    expect(second).not.toBe(first);
    // A connection of the first room that closes late releases it a second time.
    rooms.release(first);
    expect(rooms.has(1, 'k')).toBe(true);
    expect(await rooms.open(tenant, 'k')).toBe(second);
    rooms.close();
  });

  it('counts its viewers by country for the other nodes: the largest countries only, so the message stays small', async () => {
    const rooms = registry();
    const room = await rooms.open(tenant, 'k');
    // Three viewers in France, two in Germany, one in each of 60 more countries, two unknown.
    const countries = ['FR', 'FR', 'FR', 'DE', 'DE', ...Array.from({ length: 60 }, (_, i) => `X${i}`), null, null];
    for (const country of countries) room.connections.add({ session: { country } } as unknown as Connection);
    const [count] = rooms.countsHere();
    expect(count).toMatchObject({ tenantSeq: 1, broadcastId: 'k', viewers: countries.length });
    expect(count!.countries).toHaveLength(MAX_COUNTRIES_PER_ROOM_COUNT);
    expect(count!.countries!.slice(0, 3)).toEqual([['FR', 3], ['DE', 2], ['X0', 1]]);
    room.connections.clear();
    expect(rooms.countsHere()).toEqual([]);
    rooms.close();
  });

  it('opens a room afresh once it was released', async () => {
    const rooms = registry();
    const first = await rooms.open(tenant, 'k');
    rooms.release(first);
    expect(rooms.has(1, 'k')).toBe(false);
    expect(await rooms.open(tenant, 'k')).not.toBe(first);
    rooms.close();
  });
});

import { describe, expect, it } from 'vitest';
import { systemClock } from '@svc/protocol';
import type { ContentStore, InteractionStore, Tenant } from '@svc/storage';
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

  it('opens a room afresh once it was released', async () => {
    const rooms = registry();
    const first = await rooms.open(tenant, 'k');
    rooms.release(first);
    expect(rooms.has(1, 'k')).toBe(false);
    expect(await rooms.open(tenant, 'k')).not.toBe(first);
    rooms.close();
  });
});

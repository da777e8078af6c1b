import { describe, expect, it, vi } from 'vitest';
import { MAX_COUNTRIES_PER_ROOM_COUNT, systemClock, type Overlay } from '@svc/protocol';
import type { ContentStore, Interaction, InteractionStore, Tenant } from '@svc/storage';
import type { Connection } from '../src/connection';
import { RoomRegistry } from '../src/room-registry';
import { realTimers } from '../src/throttle';

const tenant = { seq: 1 } as Tenant;

function registry(listOverlays: () => Promise<unknown[]> = async () => [], listInteractions: () => Promise<Interaction[]> = async () => []): RoomRegistry {
  return new RoomRegistry(
    {
      campaignOf: async () => 1,
      content: { listOverlays, getSponsor: async () => null } as unknown as ContentStore,
      interactions: { listInteractions } as unknown as InteractionStore,
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

  it('applies the overlay changes that came while it read the stored ones: a poll shown then is in the room, with its votes stored meanwhile', async () => {
    let listed!: () => void;
    const vote: Interaction = {
      kind: 'vote', overlayId: 'p1', viewer: 'u1', eventId: 'e1', sessionId: 's1', userId: 'u1', timestampMs: 1_000, receivedAtMs: 1_000, optionIndex: 1, optionSelected: 'B',
    };
    const rooms = registry(
      async () => {
        // The overlays are listed before the poll is stored; the room is built after its show was announced.
        await new Promise<void>((resolve) => (listed = resolve));
        return [];
      },
      // A vote on the poll, stored by the time the votes are listed.
      async () => [vote],
    );
    const opening = rooms.open(tenant, 'k');
    await vi.waitFor(() => expect(listed).toBeTypeOf('function'));
    const poll = { id: 'p1', broadcastId: 'k', type: 'poll', active: true, question: 'Who?', options: ['A', 'B'], createdAt: new Date(0).toISOString() } as unknown as Overlay;
    const contest = { id: 'c1', type: 'contest', active: true, title: 'Win' } as unknown as Overlay;
    rooms.applyContentChange(1, 'k', { kind: 'show', overlay: poll });
    rooms.applyContentChange(1, 'k', { kind: 'show', overlay: contest });
    rooms.applyContentChange(1, 'k', { kind: 'hide', overlayId: 'c1', hiddenAt: new Date().toISOString() });
    rooms.applyContentChange(1, 'other', { kind: 'show', overlay: { ...contest, id: 'c2' } });
    listed();
    const room = await opening;
    expect(room.activeOverlays().map((o) => o.id)).toEqual(['p1']);
    expect(room.activeResults()).toEqual([{ pollId: 'p1', counts: [0, 1], total: 1 }]);
    // Once loaded, changes reach the room directly.
    rooms.applyContentChange(1, 'k', { kind: 'hide', overlayId: 'p1', hiddenAt: new Date().toISOString() });
    expect(room.activeOverlays()).toEqual([]);
    rooms.close();
  });

  it('drops a change heard while it read the overlays when the read already had a later one', async () => {
    let listed!: () => void;
    const at = (ms: number) => new Date(ms).toISOString();
    const lineup = { id: 'l1', broadcastId: 'k', type: 'lineup', items: [], createdAt: at(0), shownAt: at(5) };
    // Shown at 5 then hidden at 6, both stored before the read; the show's message comes late.
    const rooms = registry(async () => {
      await new Promise<void>((resolve) => (listed = resolve));
      const content = { type: 'lineup', items: [] };
      return [{ tenantSeq: 1, broadcastId: 'k', id: 'l1', type: 'lineup', content, active: false, createdAt: 0, updatedAt: 6, shownAt: 5 }];
    });
    const opening = rooms.open(tenant, 'k');
    await vi.waitFor(() => expect(listed).toBeTypeOf('function'));
    rooms.applyContentChange(1, 'k', { kind: 'hide', overlayId: 'l1', hiddenAt: at(6), updatedAt: at(6) });
    rooms.applyContentChange(1, 'k', { kind: 'show', overlay: { ...lineup, active: true, updatedAt: at(5) } as unknown as Overlay });
    listed();
    expect((await opening).activeOverlays()).toEqual([]);
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

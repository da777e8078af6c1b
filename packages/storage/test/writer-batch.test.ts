import { describe, expect, it } from 'vitest';
import { encodeEvents, type EncodedEvents, type SplitEncodedEventSink } from '../src/encoded-events';
import { eventKey } from '../src/event-store';
import type { QuarantineRow } from '../src/records';
import { NOTHING_INSERTING, prepareRows, rejectKey, withHeldRows, type InsertingRows } from '../src/nats/writer-batch';
import { eventRow, rejectRow } from './event-log-rows';

/** A sink that knows which keys and rejects are stored, and counts its lookups. */
function memorySink(storedKeys: string[], storedRejects: QuarantineRow[] = []): SplitEncodedEventSink & { lookups: string[][] } {
  const keys = new Set(storedKeys);
  const rejects = new Set(storedRejects.map(rejectKey));
  const lookups: string[][] = [];
  return {
    lookups,
    storedKeys: async (asked) => {
      const list = [...asked];
      lookups.push(list);
      return new Set(list.filter((key) => keys.has(key)));
    },
    unstoredRejects: async (rows) => rows.filter((row) => !rejects.has(rejectKey(row))),
    insertEncoded: async () => {
      throw new Error('not used here');
    },
    commitEncoded: async () => {
      throw new Error('not used here');
    },
  };
}

const key = (n: number, tenantSeq = 1) => eventKey(tenantSeq, eventRow(n).eventId);
const idsOf = (blocks: EncodedEvents[]) => blocks.flatMap((b) => b.ids.map((id) => `${b.tenantSeq}:${id}`));
const entry = (events: number[], rejects: QuarantineRow[] = []) => ({ events: encodeEvents(events.map((n) => eventRow(n))), rejects, deliveries: [] });

describe('preparing a writer batch while the one before is inserted', () => {
  it('leaves out events stored already, repeats within the batch, and the events of the batch being inserted, which it holds', async () => {
    const sink = memorySink([key(1)]);
    const inserting: InsertingRows = { keys: new Set([key(3)]), rejectKeys: new Set() };
    const prepared = await prepareRows(entry([1, 2, 3, 2, 4]), sink, inserting);
    expect(idsOf(prepared.rows.events)).toEqual([key(2), key(4)]);
    expect([...prepared.inserting.keys].sort()).toEqual([key(2), key(4)]);
    expect([...prepared.held.keys]).toEqual([key(3)]);
    expect(idsOf(prepared.held.events)).toEqual([key(3)]);
  });

  it('passes the blocks on as they are when nothing is stored, repeated or being inserted', async () => {
    const batch = entry([1, 2, 3]);
    const prepared = await prepareRows(batch, memorySink([]), NOTHING_INSERTING);
    expect(prepared.rows.events[0]).toBe(batch.events[0]);
    expect(prepared.held.keys.size).toBe(0);
  });

  it('adds nothing back when the batch before stored what this one held', async () => {
    const sink = memorySink([]);
    const prepared = await prepareRows(entry([1, 2]), sink, { keys: new Set([key(2)]), rejectKeys: new Set() });
    const lookups = sink.lookups.length;
    expect(await withHeldRows(prepared, new Set([key(2), key(9)]), sink)).toBe(prepared);
    expect(sink.lookups.length).toBe(lookups);
  });

  it('adds back, looked up again, the held events the batch before did not store: it failed (a part may be stored) or set them aside', async () => {
    const sink = memorySink([]);
    const prepared = await prepareRows(entry([1, 2, 3, 4]), sink, { keys: new Set([key(2), key(3), key(4)]), rejectKeys: new Set() });
    // Failed, after a part of it (event 3) went in.
    const stored = memorySink([key(3)]);
    const afterFailure = await withHeldRows(prepared, null, stored);
    expect(stored.lookups).toEqual([[key(2), key(3), key(4)]]);
    expect(idsOf(afterFailure.rows.events).sort()).toEqual([key(1), key(2), key(4)].sort());
    // The batch after leaves them out in turn.
    expect([...afterFailure.inserting.keys].sort()).toEqual([key(1), key(2), key(4)].sort());
    // Stored but event 4, set aside.
    const afterSetAside = await withHeldRows(prepared, new Set([key(2), key(3)]), memorySink([]));
    expect(idsOf(afterSetAside.rows.events).sort()).toEqual([key(1), key(4)].sort());
  });

  it('holds a reject of the batch being inserted, and adds it back only when that batch failed', async () => {
    const reject = rejectRow(1);
    const sink = memorySink([]);
    const prepared = await prepareRows(entry([1], [reject, rejectRow(2)]), sink, { keys: new Set(), rejectKeys: new Set([rejectKey(reject)]) });
    expect(prepared.rows.rejects.map((r) => r.id)).toEqual([rejectRow(2).id]);
    expect((await withHeldRows(prepared, new Set(), sink)).rows.rejects.map((r) => r.id)).toEqual([rejectRow(2).id]);
    expect((await withHeldRows(prepared, null, sink)).rows.rejects.map((r) => r.id)).toEqual([rejectRow(2).id, reject.id]);
    expect((await withHeldRows(prepared, null, memorySink([], [reject]))).rows.rejects.map((r) => r.id)).toEqual([rejectRow(2).id]);
  });
});

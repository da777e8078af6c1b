import { SvcError } from '@svc/protocol';
import { describe, expect, it } from 'vitest';
import { encodeEvents } from '../src/encoded-events';
import { storeOrSetAside, type WriterRows } from '../src/nats/poison-rows';
import { eventRow, rejectRow } from './event-log-rows';

const idsOf = (rows: WriterRows) => [...rows.events.flatMap((b) => b.ids), ...rows.rejects.map((r) => r.id)];

describe('finding the rows a sink refuses', () => {
  const rows: WriterRows = {
    events: [...encodeEvents(Array.from({ length: 9 }, (_, i) => eventRow(i + 1))), ...encodeEvents([eventRow(20, { tenantSeq: 2 })])],
    rejects: [rejectRow(1), rejectRow(2)],
  };
  const bad = new Set([eventRow(4).eventId, rejectRow(2).id]);

  it('stores every other row and sets each refused one aside alone', async () => {
    const stored: string[] = [];
    const setAside: string[] = [];
    const outcome = await storeOrSetAside(
      rows,
      async (part) => {
        if (idsOf(part).some((id) => bad.has(id))) throw new Error('Code: 27. Cannot parse input');
        stored.push(...idsOf(part));
        return new Set(part.events.flatMap((b) => b.ids));
      },
      async (row) => void setAside.push(...idsOf(row)),
    );
    expect(setAside.sort()).toEqual([...bad].sort());
    expect(stored.sort()).toEqual(idsOf(rows).filter((id) => !bad.has(id)).sort());
    expect(outcome.setAside).toBe(2);
    expect(outcome.inserted.size).toBe(9);
  });

  it('gives a transient failure back at once, without splitting the batch', async () => {
    let calls = 0;
    const down = new SvcError('storage_unavailable', 'down');
    await expect(storeOrSetAside(rows, async () => (calls++, Promise.reject(down)), async () => {})).rejects.toBe(down);
    expect(calls).toBe(1);
  });
});

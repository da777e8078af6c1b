import { SvcError } from '@svc/protocol';
import { describe, expect, it } from 'vitest';
import { encodeEvents } from '../src/encoded-events';
import { setAsideRow, storeOrSetAside, type WriterRows } from '../src/nats/poison-rows';
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

  it('gives a failure that concerns the whole database back as it is, without splitting the batch', async () => {
    const failures = [
      new Error('Code: 60, e.displayText() = DB::Exception: Table svc.events doesn\'t exist., e.what() = DB::Exception'),
      new Error('Code: 164. DB::Exception: default: Cannot execute query in readonly mode. (READONLY)'),
      new Error('Code: 192. DB::Exception: Unknown user svc. (UNKNOWN_USER)'),
      new Error('Code: 193, e.displayText() = DB::Exception: Wrong password for user default'),
      new Error('Code: 497. DB::Exception: svc: Not enough privileges. (ACCESS_DENIED)'),
      new Error('Code: 516. DB::Exception: svc: Authentication failed. (AUTHENTICATION_FAILED)'),
      new Error('Code: 394. DB::Exception: Query was cancelled. (QUERY_WAS_CANCELLED)'),
      new Error('Code: 3. DB::Exception: Unexpected end of file while reading chunk header of HTTP chunked data'),
      new Error('Code: 32, e.displayText() = DB::Exception: Attempt to read after eof'),
      new Error('<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>'),
      new Error('Code: 252, e.displayText() = DB::Exception: Too many parts (300). Merges are processing significantly slower than inserts.'),
    ];
    for (const failure of failures) {
      let calls = 0;
      const setAside: string[] = [];
      await expect(storeOrSetAside(rows, async () => (calls++, Promise.reject(failure)), async (row) => void setAside.push(...idsOf(row)))).rejects.toBe(failure);
      expect([String(failure), calls, setAside]).toEqual([String(failure), 1, []]);
    }
  });

  it('splits an insert that spans too many month partitions until its parts go in, setting nothing aside', async () => {
    const tooMany = new Error('Code: 252, e.displayText() = DB::Exception: Too many partitions for single INSERT block (more than 4). The limit is controlled by \'max_partitions_per_insert_block\' setting.');
    const stored: string[] = [];
    const outcome = await storeOrSetAside(
      rows,
      async (part) => {
        if (idsOf(part).length > 4) throw tooMany;
        stored.push(...idsOf(part));
        return new Set(part.events.flatMap((b) => b.ids));
      },
      async () => Promise.reject(new Error('nothing is set aside')),
    );
    expect(stored.sort()).toEqual(idsOf(rows).sort());
    expect(outcome).toMatchObject({ setAside: 0 });
    expect(outcome.inserted.size).toBe(10);
  });

  it('makes a refused reject storable in the quarantine: a UUID for its id, no lone surrogate in its text', () => {
    const refused = rejectRow(1, { id: 'not-a-uuid', payload: '{"q":"\ud800"}', userId: 'u\udc00', detail: 'bad \ud800' });
    const row = setAsideRow({ events: [], rejects: [refused] }, new Error('Code: 25. Cannot parse escape sequence'));
    expect(row.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-8[0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(setAsideRow({ events: [], rejects: [refused] }, new Error('again')).id).toBe(row.id);
    expect([row.payload, row.userId, row.code]).toEqual(['{"q":"\ufffd"}', 'u\ufffd', 'event_not_storable']);
    expect(row.detail).toContain('bad \ufffd');
  });
});

import { randomUUID } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { eventKey } from '../src';
import { RecentKeys, unseenEvents } from '../src/recent-keys';
import { eventRow } from './event-log-rows';

/** A UUID whose words are all `word` but one. */
const uuidWith = (word: string, last: string) => `${word}-${word.slice(0, 4)}-${word.slice(4)}-${word.slice(0, 4)}-${word.slice(4)}${last}`;

describe('the recent event keys', () => {
  it('knows exactly the (tenant, id) pairs added, whatever the case of the id', () => {
    const recent = new RecentKeys(100);
    const id = randomUUID();
    recent.add(1, id);
    expect(recent.has(1, id)).toBe(true);
    expect(recent.has(1, id.toUpperCase())).toBe(true);
    expect(recent.has(2, id)).toBe(false);
    expect(recent.has(0, id)).toBe(false);
    // Ids one bit apart in each of the four words are different events.
    const base = uuidWith('00000000', '0000');
    recent.add(7, base);
    expect(recent.has(7, base)).toBe(true);
    for (const other of [uuidWith('00000000', '0001'), '10000000-0000-0000-0000-000000000000', '00000000-0001-0000-0000-000000000000', '00000000-0000-0000-0001-000000000000']) {
      expect(recent.has(7, other)).toBe(false);
    }
  });

  it('keeps ids that are not UUIDs as well, exactly', () => {
    const recent = new RecentKeys(100);
    for (const id of ['x', 'order-1', '0190abcd-0000-7000-8000-00000000000g', '0190abcd+0000-7000-8000-000000000000', '']) {
      expect(recent.has(3, id)).toBe(false);
      recent.add(3, id);
      expect(recent.has(3, id)).toBe(true);
      expect(recent.has(4, id)).toBe(false);
    }
    recent.add(2 ** 32, 'ffffffff-ffff-ffff-ffff-ffffffffffff');
    expect(recent.has(2 ** 32, 'ffffffff-ffff-ffff-ffff-ffffffffffff')).toBe(true);
    expect(recent.has(0, 'ffffffff-ffff-ffff-ffff-ffffffffffff')).toBe(false);
  });

  it('remembers two generations: a key leaves once two newer generations filled up', () => {
    const recent = new RecentKeys(3);
    const ids = Array.from({ length: 9 }, () => randomUUID());
    ids.slice(0, 3).forEach((id) => recent.add(1, id));
    ids.slice(3, 6).forEach((id) => recent.add(1, id));
    expect(ids.slice(0, 6).every((id) => recent.has(1, id))).toBe(true);
    recent.add(1, ids[6]!);
    expect(ids.slice(0, 3).some((id) => recent.has(1, id))).toBe(false);
    expect(ids.slice(3, 7).every((id) => recent.has(1, id))).toBe(true);
  });

  it('holds a full generation of ids, each found and none other', () => {
    const recent = new RecentKeys(50_000);
    const ids = Array.from({ length: 50_000 }, () => randomUUID());
    ids.forEach((id, i) => recent.add(1 + (i % 3), id));
    expect(ids.every((id, i) => recent.has(1 + (i % 3), id))).toBe(true);
    expect(ids.some((id, i) => recent.has(1 + ((i + 1) % 3), id))).toBe(false);
    expect(Array.from({ length: 10_000 }, () => randomUUID()).some((id) => recent.has(1, id))).toBe(false);
  });

  it('keeps its ids out of the garbage-collected heap', () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const recent = new RecentKeys(200_000);
    recent.add(1, randomUUID());
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < 200_000; i++) recent.add(1, randomUUID());
    gc();
    const grown = process.memoryUsage().heapUsed - before;
    // 200,000 key strings and their set entries take more than 10 MB of heap to trace at every full collection.
    expect(grown).toBeLessThan(2_000_000);
    expect(recent.has(1, randomUUID())).toBe(false);
  });

  it('picks the events of a batch not seen yet: each id once, in order, with their keys', () => {
    const recent = new RecentKeys(100);
    const [a, b, c] = [eventRow(1), eventRow(2), eventRow(3, { tenantSeq: 2 })];
    recent.add(b.tenantSeq, b.eventId.toUpperCase());
    const { events, keys, unseen } = unseenEvents({ events: [a, b, a, c], rejects: [] }, recent);
    expect(events).toEqual([a, c]);
    expect(keys).toEqual([eventKey(a.tenantSeq, a.eventId), eventKey(c.tenantSeq, c.eventId)]);
    expect([...unseen]).toEqual(keys);
  });
});

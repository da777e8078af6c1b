import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChDatabase } from '../src/clickhouse/ch-database';
import { CH_MIGRATIONS } from '../src/clickhouse/ch-migrations';
import { DATA_FIELD_COLUMNS, dataFieldValues } from '../src/clickhouse/data-fields';
import { ClickHouseEventStore } from '../src/clickhouse/clickhouse-event-store';
import { insertLine, toInsertRow } from '../src/clickhouse/event-sql';
import type { EncodedEvents, EventRow } from '../src';
import { clickhouseAvailable, startClickHouse, type ClickHouseServer } from './clickhouse-server';
import { insertEarlierEvents } from './clickhouse-events';
import { eventRow } from './event-log-rows';

const available = clickhouseAvailable();
const COLUMNS = DATA_FIELD_COLUMNS.map(([column]) => column);
const FIELDS = ['sponsorId', 'pollId', 'optionIndex', 'optionSelected', 'contestId', 'currency'];

/** Texts with what JSON escapes or splits on: quotes, backslashes, brackets, keys, control characters, emoji. */
const tricky = fc.oneof(
  fc.string(),
  fc.constantFrom('', '"', '\\', '{', '}', '[', ']', '"sponsorId":', '{"pollId":"x"}', 'a\u0000b', '\n\t', '\u00e9\ud83d\ude00', '\u2028'),
);
const scalar = fc.oneof(tricky, fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null));
/** `data` objects: the fields the dashboard reads among others, nested ones too, in any order and of any type. */
const data = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, scalar, fc.array(tie('value'), { maxLength: 3 }), tie('object')),
  object: fc.dictionary(fc.oneof(fc.constantFrom(...FIELDS, 'ctx', 'a"sponsorId'), fc.string({ maxLength: 4 })), tie('value'), { maxKeys: 6 }),
})).object.map((object) => JSON.stringify(object));

describe.runIf(available)("the columns of data's fields", () => {
  let server: ClickHouseServer;
  beforeAll(async () => {
    server = await startClickHouse();
  }, 60_000);
  afterAll(() => server?.stop());

  const values = async (db: ChDatabase) =>
    db.query<Record<string, string>>(`SELECT toString(event_id) AS id, data, ${COLUMNS.join(', ')} FROM events ORDER BY id`);

  it('hold what the columns compute from data, in parts stored before the migration and in rows nodes write', async () => {
    const texts = [
      ...fc.sample(data, { numRuns: 400, seed: 20261126 }),
      '{"ctx":{"sponsorId":"evil","l":["{"]},"a\\"sponsorId":"x","sponsorId":"acme"}',
      '{"s":"{\\"sponsorId\\":\\"evil\\"","sponsorId":"acme"}',
      '{"cart":{"currency":"USD"},"currency":"EUR"}',
      '{"optionIndex":-1.5e-7,"pollId":"p","optionSelected":"\\u0000\\""}',
      '{}', 'not json', '[1,2]', '"text"',
    ];
    const name = await server.createDatabase();
    // A database of the release before, holding these events; then the migration.
    const before = await ChDatabase.open(server.url, name, { migrations: CH_MIGRATIONS.filter((m) => m.version < 5) });
    await insertEarlierEvents(before, texts.map((text, i) => eventRow(i, { data: text })));
    await before.close();
    const db = await ChDatabase.open(server.url, name);
    // The same texts again, as a node writes them (its own computed columns).
    await new ClickHouseEventStore(db).commit({ events: texts.map((text, i) => eventRow(10_000 + i, { data: text })), rejects: [] });
    const rows = await values(db);
    expect(rows).toHaveLength(2 * texts.length);
    for (const row of rows) {
      const { id: _, data: text, ...columns } = row;
      expect({ data: text, ...columns }).toEqual({ data: text, ...dataFieldValues(text!) });
    }
    // Merged into one part, the older rows keep their values.
    await db.command('OPTIMIZE TABLE events FINAL');
    expect(await values(db)).toEqual(rows);
    await db.close();
  }, 120_000);

  it('are computed from data for lines a node of the release before encoded (a backlog in the event log)', async () => {
    const db = await ChDatabase.open(server.url, await server.createDatabase());
    const texts = ['{"pollId":"p1","optionIndex":2,"optionSelected":"B"}', '{"ctx":{"sponsorId":"x"},"sponsorId":"acme","currency":"GBP"}', '{"contestId":"c"}'];
    const block = (rows: EventRow[], line: (row: EventRow) => string): EncodedEvents => ({
      tenantSeq: 1, ids: rows.map((row) => row.eventId), users: rows.map((row) => row.userId), received: rows.map((row) => row.receivedAtMs),
      lines: Buffer.from(rows.map((row) => `${line(row)}\n`).join('')),
    });
    const fields = new Set<string>(COLUMNS);
    const earlierLine = (row: EventRow) => JSON.stringify(Object.fromEntries(Object.entries(toInsertRow(row)).filter(([name]) => !fields.has(name))));
    await new ClickHouseEventStore(db).insertEncoded({
      events: [block(texts.map((text, i) => eventRow(i, { data: text })), earlierLine), block(texts.map((text, i) => eventRow(100 + i, { data: text })), insertLine)],
      rejects: [],
    });
    const rows = await values(db);
    expect(rows).toHaveLength(2 * texts.length);
    for (const { id: _, data: text, ...columns } of rows) expect(columns).toEqual(dataFieldValues(text!));
    await db.close();
  });

  it('leave a column a later migration adds to its DEFAULT when nodes write events', async () => {
    const db = await ChDatabase.open(server.url, await server.createDatabase());
    await db.command("ALTER TABLE events ADD COLUMN later String DEFAULT concat('from ', event)");
    await new ClickHouseEventStore(db).commit({ events: [eventRow(1, { event: 'poll.voted' })], rejects: [] });
    expect(await db.query('SELECT later FROM events')).toEqual([{ later: 'from poll.voted' }]);
    await db.close();
  });

  it('are added once by nodes that start together on a database of the release before', async () => {
    const name = await server.createDatabase();
    await (await ChDatabase.open(server.url, name, { migrations: CH_MIGRATIONS.filter((m) => m.version < 5) })).close();
    const nodes = await Promise.all(Array.from({ length: 4 }, () => ChDatabase.open(server.url, name)));
    const [db] = nodes;
    const columns = await db!.query<{ name: string }>(`SELECT name FROM system.columns WHERE database = currentDatabase() AND table = 'events' AND name LIKE 'data\\_%' ORDER BY name`);
    expect(columns.map((column) => column.name)).toEqual([...COLUMNS].sort());
    await Promise.all(nodes.map((node) => node.close()));
  }, 60_000);
});

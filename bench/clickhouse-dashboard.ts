/**
 * The dashboard on ClickHouse: how fast the overview is from the hour rollups, against the same
 * store reading every panel from the events (as before any hour is derived) and the embedded
 * store on the same events. Standalone (starts its own ClickHouse 18.16):
 *
 *   npx tsx bench/clickhouse-dashboard.ts [events, default 300000]
 *
 * The events are the dashboard benchmark's (bench/dashboard-data.ts: 30 days, 200 broadcasts),
 * generated into DuckDB and copied to ClickHouse in parts of 50,000 rows, then every 10th event
 * again in parts of its own, with merges stopped: the copies stay unmerged while it measures.
 * Then every hour is derived (as the nodes do once an hour is quiet: timed), and the ways of
 * reading take turns, each giving the same answers (checked):
 *
 * - `derived hours`: the store as written (the rollups of every hour);
 * - `events only`: the same store with no derived hour listed (every panel derives its rows
 *   from the events of the range while it reads, as before the first derivation).
 */
import { AnalyticsService } from '@svc/analytics';
import { PollCatalogue } from '@svc/content';
import { ChDatabase, ClickHouseAnalyticsStore, dataFieldValues, DuckDbAnalyticsStore, DuckDbContentStore, DuckDbDatabase, DuckDbMetaStore, type AnalyticsStore, type Tenant } from '@svc/storage';
import { TenantService } from '@svc/tenancy';
import type { ClickHouseSettings } from '@clickhouse/client';
import { startClickHouse, type ClickHouseServer } from '../packages/storage/test/clickhouse-server';
import { generateDashboardData } from './dashboard-data';
import { base62 } from './ingest';
import { tempFolder } from './processes';

const EVENTS = Number(process.argv[2] ?? 300_000);
const PART_ROWS = 50_000;
const COPY_EVERY = 10;
const RUNS = 7;
const DAY_MS = 86_400_000;
/** A derivation answers for an hour from this long after its last insert (the store's default), ms. */
const SETTLE_MS = 2_100;

type Rewrite = (sql: string) => string;
const REWRITES: Record<string, Rewrite> = {
  'derived hours': (sql) => sql,
  'events only': (sql) => sql.replace(/FROM rollup_versions WHERE/g, 'FROM rollup_versions WHERE 0 AND'),
};

/** The database with every query rewritten (a benchmark device: the store reads through `query` only). */
function rewriting(db: ChDatabase, rewrite: Rewrite): ChDatabase {
  return Object.assign(Object.create(db) as ChDatabase, { query: (sql: string, settings?: ClickHouseSettings) => db.query(rewrite(sql), settings) });
}

const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)]!;

/** The overview without the moment it was made: what the ways of reading must agree on. */
async function overview(service: AnalyticsService, tenant: Tenant, fromMs: number, toMs: number): Promise<string> {
  const { generatedAt: _, ...panels } = await service.overview(tenant, { fromMs, toMs });
  return JSON.stringify(panels);
}

/** The panels of two overviews that differ. */
function differences(a: string, b: string): string {
  const [x, y] = [JSON.parse(a) as Record<string, unknown>, JSON.parse(b) as Record<string, unknown>];
  return Object.keys(x).filter((key) => JSON.stringify(x[key]) !== JSON.stringify(y[key])).join(', ');
}

const folder = tempFolder('svc-bench-ch-dashboard-');
let server: ClickHouseServer | null = null;
try {
  const duck = await DuckDbDatabase.open(folder.path);
  const { tenant } = await new TenantService(new DuckDbMetaStore(duck)).createTenant({ id: 'bench', name: 'bench', apiKey: `svc_pk_${base62(32)}`, adminToken: `svc_sk_${base62(32)}` });
  const data = await generateDashboardData(duck, tenant.seq, EVENTS, Date.now());
  const rows = await duck.query(
    `SELECT tenant_seq, event_id::VARCHAR AS event_id, event, user_id, session_id, broadcast_id, campaign_id, epoch_ms(ts) AS timestamp_ms,
            epoch_ms(received_at) AS received_at_ms, country, order_id, sponsor_id, total, items, data FROM events ORDER BY ts`,
  );
  // With the fields of `data` a node writes beside it.
  const plain = rows.map((row) => ({
    ...row, campaign_id: Number(row.campaign_id), timestamp_ms: Number(row.timestamp_ms), received_at_ms: Number(row.received_at_ms), ...dataFieldValues(String(row.data)),
  }));
  server = await startClickHouse();
  const ch = await ChDatabase.open(server.url, await server.createDatabase());
  await ch.command('SYSTEM STOP MERGES events');
  let t0 = performance.now();
  for (let i = 0; i < plain.length; i += PART_ROWS) await ch.insert('events', plain.slice(i, i + PART_ROWS));
  const insertSeconds = (performance.now() - t0) / 1000;
  const copies = plain.filter((_, i) => i % COPY_EVERY === 0);
  for (let i = 0; i < copies.length; i += PART_ROWS) await ch.insert('events', copies.slice(i, i + PART_ROWS));
  const [count] = await ch.query<{ rows: string; ids: string; parts: string }>(
    `SELECT count() AS rows, uniqExact(event_id) AS ids, (SELECT count() FROM system.parts WHERE database = currentDatabase() AND table = 'events' AND active) AS parts FROM events`,
  );
  console.log(`${data.events} events (${data.sessions} sessions); ClickHouse holds ${count!.rows} rows of ${count!.ids} ids in ${count!.parts} parts; insert ${(plain.length / insertSeconds).toFixed(0)} rows/s`);

  const polls = await new PollCatalogue().load(new DuckDbContentStore(duck));
  await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  t0 = performance.now();
  const deriving = new ClickHouseAnalyticsStore(ch, polls, { quietSeconds: 0 });
  while ((await deriving.deriveHours()) > 0);
  while ((await deriving.answerBroadcasts()) > 0);
  const deriveSeconds = (performance.now() - t0) / 1000;
  const [derived] = await ch.query<{ hours: string }>('SELECT uniqExact(tenant_seq, hour) AS hours FROM rollup_versions');
  console.log(`derived ${derived!.hours} hours in ${deriveSeconds.toFixed(1)} s (${(Number(count!.rows) / deriveSeconds).toFixed(0)} event rows/s)`);
  const ranges: Array<[string, number, number]> = [
    ['7 days', data.toMs - 7 * DAY_MS, data.toMs],
    ['30 days', data.fromMs, data.toMs],
    ['1 day', data.toMs - DAY_MS, data.toMs],
  ];
  const stores: Array<[string, AnalyticsStore]> = [
    ...Object.entries(REWRITES).map(([name, rewrite]): [string, AnalyticsStore] => [`ClickHouse, ${name}`, new ClickHouseAnalyticsStore(rewriting(ch, rewrite), polls)]),
    ['DuckDB (rollups, embedded)', new DuckDbAnalyticsStore(duck)],
  ];
  // The ways of reading take turns, run after run, so that a busy moment of the machine hits them alike.
  const services = stores.map(([name, store]) => [name, new AnalyticsService(store)] as const);
  const medians = new Map<string, string[]>(services.map(([name]) => [name, []]));
  for (const [range, fromMs, toMs] of ranges) {
    const expected = await overview(services[0]![1], tenant, fromMs, toMs);
    const times = new Map<string, number[]>(services.map(([name]) => [name, []]));
    for (const [name, service] of services) {
      const answer = await overview(service, tenant, fromMs, toMs);
      if (answer !== expected) throw new Error(`${name} answers differently over ${range}: ${differences(expected, answer)}`);
    }
    for (let run = 0; run < RUNS; run++) {
      for (const [name, service] of services) {
        const t0 = performance.now();
        await service.overview(tenant, { fromMs, toMs });
        times.get(name)!.push(performance.now() - t0);
      }
    }
    for (const [name] of services) medians.get(name)!.push(median(times.get(name)!).toFixed(0));
  }
  console.log(`| reading | ${ranges.map(([name]) => `overview ${name} (ms)`).join(' | ')} |`);
  console.log(`|---|${ranges.map(() => '---:').join('|')}|`);
  for (const [name, cells] of medians) console.log(`| ${name} | ${cells.join(' | ')} |`);

  // Where the time of the longest overview goes, panel by panel (each alone, median of RUNS).
  const [, fromMs, toMs] = ranges[1]!;
  const filter = { tenantSeq: tenant.seq, fromMs, toMs };
  const panels: Array<[string, (store: AnalyticsStore) => Promise<unknown>]> = [
    ['viewers', (store) => store.viewerSeries(filter)],
    ['engagement', (store) => store.engagement(filter)],
    ['polls', (store) => store.pollResults(filter)],
    ['sponsors', (store) => store.sponsorPerformance(filter)],
    ['revenue', (store) => store.revenue(filter)],
    ['funnel', (store) => store.funnel(filter)],
  ];
  console.log(`\n| panel, 30 days (ms) | ${stores.map(([name]) => name).join(' | ')} |`);
  console.log(`|---|${stores.map(() => '---:').join('|')}|`);
  for (const [panel, ask] of panels) {
    const times = stores.map(() => [] as number[]);
    for (let run = 0; run < RUNS; run++) {
      for (const [i, [, store]] of stores.entries()) {
        const t0 = performance.now();
        await ask(store);
        times[i]!.push(performance.now() - t0);
      }
    }
    console.log(`| ${panel} | ${times.map((t) => median(t).toFixed(0)).join(' | ')} |`);
  }
  await ch.close();
  await duck.close();
} finally {
  await server?.stop();
  folder.remove();
}

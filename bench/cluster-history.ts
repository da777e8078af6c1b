import { randomBytes } from 'node:crypto';
import { AnalyticsService } from '@svc/analytics';
import { PollCatalogue } from '@svc/content';
import { startNats, type ClickHouseServer, type PostgresServer } from '@svc/engines';
import { ChDatabase, ClickHouseAnalyticsStore, ClickHouseEventStore, ROLLUP_SETTLE_SECONDS, DuckDbAnalyticsStore, DuckDbContentStore, DuckDbDatabase, DuckDbEventStore, DuckDbMetaStore, PgContentStore, PgDatabase, type EventRow, type Tenant } from '@svc/storage';
import { uuidv7 } from 'uuidv7';
import { TenantService } from '@svc/tenancy';
import { copyEventsToClickHouse } from './clickhouse-copy';
import { generateDashboardData } from './dashboard-data';
import { deleteUser, remainingEvents, streamExport, type DeletionResult, type StreamResult } from './export';
import { base62 } from './ingest';
import { percentile } from './load';
import { startService, tempFolder, type Child } from './processes';
import { fmt } from './report';

const DAY_MS = 86_400_000;
/** Client-side limit of one query of the benchmark's own ClickHouse connection (copy, overviews). */
const QUERY_TIMEOUT_MS = 600_000;
/** Longest wait for ClickHouse's merges before the dashboard reads. */
const MERGE_WAIT_MS = 600_000;

export interface HistoryOptions {
  /** Events generated (the 10 million by default). */
  events: number;
  /** Users deleted one after the other, the same ones on each store. */
  deletions: number;
  /** Overviews timed per range and store. */
  dashboardRuns: number;
  log: (line: string) => void;
}

/** One store's figures: the embedded node (DuckDB) or the cluster node (ClickHouse). */
export interface StoreHistory {
  export: StreamResult;
  deletions: DeletionResult[];
  /** Events of the deleted users the export still gave afterwards. */
  leftBehind: number;
}

export interface OverviewTimes {
  range: string;
  /** Sorted, ms. */
  clickhouseMs: Float64Array;
  duckdbMs: Float64Array;
}

export interface HistoryResult {
  events: number;
  generateSeconds: number;
  copySeconds: number;
  /** Seconds the derivation of every hour's dashboard rollups and of the answers kept per broadcast took after the copy (as the nodes do once hours are quiet). */
  deriveSeconds: number;
  /** Seconds waited after the derivation for ClickHouse's merges to end (at most MERGE_WAIT_MS). */
  mergeWaitSeconds: number;
  /** Active parts of `events` in ClickHouse when the reads began. */
  clickhouseParts: number;
  overviews: OverviewTimes[];
  /** Ranges whose overview differed between ClickHouse and DuckDB. */
  overviewMismatches: string[];
  embedded: StoreHistory;
  cluster: StoreHistory;
}

/**
 * One more event into the newest hour of the tenant's events, stored in both databases as nodes
 * store it (a copy of that hour's newest event under a new id, a millisecond later): the hour is
 * then stored into since its derivation, as the current hour is while a broadcast runs.
 */
async function storeArrivingEvent(duck: DuckDbDatabase, ch: ChDatabase, tenantSeq: number): Promise<void> {
  const [newest] = await duck.query(
    `SELECT event, user_id, session_id, broadcast_id, campaign_id, epoch_ms(ts) AS ts_ms, epoch_ms(received_at) AS received_ms, country,
            order_id, sponsor_id, total, items, data
     FROM events WHERE tenant_seq = $1 ORDER BY ts DESC LIMIT 1`,
    [tenantSeq],
  );
  if (!newest) throw new Error('no event to follow');
  const text = (value: unknown) => (value === null || value === undefined ? null : String(value));
  const event: EventRow = {
    tenantSeq, eventId: uuidv7(), event: String(newest.event), userId: text(newest.user_id), sessionId: String(newest.session_id),
    broadcastId: String(newest.broadcast_id), campaignId: Number(newest.campaign_id), timestampMs: Number(newest.ts_ms) + 1,
    receivedAtMs: Number(newest.received_ms) + 1, country: text(newest.country), orderId: text(newest.order_id), sponsorId: text(newest.sponsor_id),
    total: newest.total === null ? null : Number(newest.total), items: text(newest.items), data: String(newest.data),
  };
  await new DuckDbEventStore(duck).commit({ events: [event], rejects: [] });
  await new ClickHouseEventStore(ch).commit({ events: [event], rejects: [] });
}

/** The overview without the moment it was made, for comparing two stores' answers. */
async function overviewText(service: AnalyticsService, tenant: Tenant, fromMs: number, toMs: number): Promise<string> {
  const { generatedAt: _, ...panels } = await service.overview(tenant, { fromMs, toMs });
  return JSON.stringify(panels);
}

async function exportAndDelete(node: Child, adminToken: string, users: { userId: string; events: number }[], log: (line: string) => void): Promise<StoreHistory> {
  log('  streamed export (ndjson)…');
  const result = await streamExport(node, adminToken, 'ndjson');
  log(`    ${fmt.int(result.lines / result.seconds)} events/s, ${fmt.int(result.lines)} lines in ${result.seconds.toFixed(1)} s, peak RSS ${fmt.int(result.peakRssMiB)} MiB`);
  const deletions: DeletionResult[] = [];
  let leftBehind = 0;
  for (const user of users) {
    const deletion = await deleteUser(node, adminToken, user.userId, user.events);
    deletions.push(deletion);
    leftBehind += await remainingEvents(node, adminToken, user.userId);
    log(`    deleted ${user.userId}: ${deletion.deleted} of ${user.events} events, ${fmt.int(deletion.clientMs)} ms (job ${fmt.int(deletion.jobMs)} ms)`);
  }
  if (node.exitCode() !== 'running') throw new Error(`the node exited during the run:\n${node.output()}`);
  return { export: result, deletions, leftBehind };
}

/**
 * The history side of cluster mode at the size: `events` generated once (the dashboard
 * benchmark's data) into an embedded database and copied to ClickHouse; the dashboard overview
 * timed on both (in process, taking turns); then, over HTTP, the NDJSON export and the deletion
 * of the same users on an embedded node (DuckDB) and on a cluster node (ClickHouse).
 */
export async function historyBenchmark(options: HistoryOptions, postgres: PostgresServer, clickhouse: ClickHouseServer): Promise<HistoryResult> {
  const log = options.log;
  const folder = tempFolder('svc-bench-cluster-history-');
  const credentials = { apiKey: `svc_pk_${base62(32)}`, adminToken: `svc_sk_${base62(32)}` };
  const nats = await startNats();
  const database = `svc_bench_history_${randomBytes(4).toString('hex')}`;
  const nodeFolder = tempFolder('svc-bench-history-node-');
  let node: Child | null = null;
  let ch: ChDatabase | null = null;
  try {
    // The cluster node first: it creates the tenant in PostgreSQL (whose seq the copied events carry) and the ClickHouse schema.
    log('history: starting a cluster node…');
    const postgresUrl = await postgres.createDatabase();
    const nodeEnv = {
      SVC_BOOTSTRAP_API_KEY: credentials.apiKey,
      SVC_BOOTSTRAP_ADMIN_TOKEN: credentials.adminToken,
      SVC_POSTGRES_URL: postgresUrl,
      SVC_NATS_URL: nats.url,
      SVC_CLICKHOUSE_URL: `${clickhouse.url}/${database}`,
    };
    node = await startService(nodeFolder.path, nodeEnv, 90_000);
    const pg = await PgDatabase.open(postgresUrl);
    const [clusterTenant] = await pg.run((sql) => sql<{ seq: number }[]>`SELECT seq FROM tenants WHERE id = 'demo'`);

    const duck = await DuckDbDatabase.open(folder.path);
    let users: { userId: string; events: number }[];
    let generateSeconds: number;
    let copy: { rows: number; bytes: number; seconds: number };
    let clickhouseParts: number;
    let deriveSeconds: number;
    let mergeWaitSeconds: number;
    const overviews: OverviewTimes[] = [];
    const overviewMismatches: string[] = [];
    let events: number;
    try {
      const { tenant } = await new TenantService(new DuckDbMetaStore(duck)).createTenant({ id: 'bench', name: 'Cluster history benchmark', ...credentials });
      if (tenant.seq !== Number(clusterTenant?.seq)) throw new Error(`tenant seq ${tenant.seq} in DuckDB, ${String(clusterTenant?.seq)} in PostgreSQL: the copied events would belong to no tenant`);
      log(`history: generating ${fmt.int(options.events)} events…`);
      const t0 = performance.now();
      const data = await generateDashboardData(duck, tenant.seq, options.events, Date.now());
      generateSeconds = (performance.now() - t0) / 1000;
      events = data.events;
      // The polls the votes name, in PostgreSQL too, as in a cluster where they were created: a
      // node checks votes against its own catalogue (loaded at its start) when it derives an hour,
      // and it derives the hours of the copy that are quiet before the copy ends.
      const pgContent = new PgContentStore(pg);
      for (const poll of await new DuckDbContentStore(duck).listPolls()) await pgContent.createOverlay(poll);
      await node.stop();
      node = await startService(nodeFolder.path, nodeEnv, 90_000);
      await duck.write((connection) => connection.run('CHECKPOINT'));
      // As the export benchmark picks them: typical users, ids of the greatest length, the same every run.
      users = (
        await duck.query(
          `SELECT user_id, count(*) AS n FROM events
           WHERE tenant_seq = $1 AND user_id IS NOT NULL
             AND length(user_id) = (SELECT max(length(user_id)) FROM events WHERE tenant_seq = $1)
           GROUP BY user_id ORDER BY hash(user_id) LIMIT ${options.deletions}`,
          [tenant.seq],
        )
      ).map((row) => ({ userId: String(row.user_id), events: Number(row.n) }));

      // A month's overview over 10 million events may take longer than the client's default minute per query.
      ch = await ChDatabase.open(clickhouse.url, database, { requestTimeoutMs: QUERY_TIMEOUT_MS });
      log(`history: copying ${fmt.int(events)} events to ClickHouse…`);
      copy = await copyEventsToClickHouse(duck, tenant.seq, clickhouse.url, database, folder.path);
      log(`  ${fmt.int(copy.rows / copy.seconds)} rows/s (${fmt.int(copy.bytes / 2 ** 20)} MiB of JSON)`);
      const [held] = await ch.query<{ n: string; parts: string }>(
        `SELECT count() AS n, (SELECT count() FROM system.parts WHERE database = currentDatabase() AND table = 'events' AND active) AS parts FROM events`,
      );
      if (Number(held?.n) !== copy.rows) throw new Error(`ClickHouse holds ${String(held?.n)} of the ${copy.rows} events copied`);
      clickhouseParts = Number(held?.parts ?? 0);

      const polls = await new PollCatalogue().load(new DuckDbContentStore(duck));
      // The rollups of every hour, as a node derives them once an hour is quiet (here at once,
      // after the settling time the store requires since the last insert).
      log('history: deriving the dashboard rollups of every hour and the answers kept per broadcast…');
      await new Promise((resolve) => setTimeout(resolve, (ROLLUP_SETTLE_SECONDS + 1) * 1000));
      const deriving = performance.now();
      const deriver = new ClickHouseAnalyticsStore(ch, polls, { quietSeconds: 0 });
      while ((await deriver.deriveHours()) > 0);
      while ((await deriver.answerBroadcasts()) > 0);
      deriveSeconds = (performance.now() - deriving) / 1000;
      log(`  ${deriveSeconds.toFixed(1)} s`);
      // The dashboard of a running cluster reads merged parts: the reads begin once ClickHouse has
      // merged what the copy and the derivation wrote (bounded; the notes give the wait).
      const merging = performance.now();
      while (performance.now() - merging < MERGE_WAIT_MS) {
        const [merges] = await ch.query<{ n: string }>('SELECT count() AS n FROM system.merges WHERE database = currentDatabase()');
        if (Number(merges?.n ?? 0) === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 2_000));
      }
      mergeWaitSeconds = (performance.now() - merging) / 1000;
      const [parts] = await ch.query<{ n: string }>("SELECT count() AS n FROM system.parts WHERE database = currentDatabase() AND table = 'events' AND active");
      clickhouseParts = Number(parts?.n ?? 0);
      log(`  merges done after ${mergeWaitSeconds.toFixed(0)} s more (${clickhouseParts} active parts of events)`);
      const onClickHouse = new AnalyticsService(new ClickHouseAnalyticsStore(ch, polls));
      const onDuckDb = new AnalyticsService(new DuckDbAnalyticsStore(duck));
      const today = Math.floor(data.toMs / DAY_MS) * DAY_MS;
      const ranges: Array<[string, number, number, 'live'?]> = [
        ['default range (last 7 days)', data.toMs - 7 * DAY_MS, data.toMs],
        ['all 30 days', data.fromMs, data.toMs],
        // As the dashboard loads it (its 7 calendar days, today's included, in UTC) while a
        // broadcast runs: events arriving into the newest hour, which panels then read from the events.
        ["dashboard's default view (7 days to today, newest hour receiving events)", today - 6 * DAY_MS, today + DAY_MS, 'live'],
      ];
      for (const [range, fromMs, toMs, live] of ranges) {
        if (live) {
          await storeArrivingEvent(duck, ch, tenant.seq);
          events++;
        }
        log(`history: dashboard overview, ${range}, ${options.dashboardRuns} runs each…`);
        // First answers (not timed) must agree.
        const [onCh, onDuck] = [await overviewText(onClickHouse, tenant, fromMs, toMs), await overviewText(onDuckDb, tenant, fromMs, toMs)];
        if (onCh !== onDuck) {
          overviewMismatches.push(range);
          const [a, b] = [JSON.parse(onCh) as Record<string, unknown>, JSON.parse(onDuck) as Record<string, unknown>];
          for (const panel of Object.keys(a).filter((key) => JSON.stringify(a[key]) !== JSON.stringify(b[key]))) {
            log(`  the stores differ on ${panel}: ClickHouse ${JSON.stringify(a[panel]).slice(0, 800)}; DuckDB ${JSON.stringify(b[panel]).slice(0, 800)}`);
          }
        }
        const times = { clickhouse: [] as number[], duckdb: [] as number[] };
        for (let run = 0; run < options.dashboardRuns; run++) {
          for (const [name, service] of [['clickhouse', onClickHouse], ['duckdb', onDuckDb]] as const) {
            const start = performance.now();
            await service.overview(tenant, { fromMs, toMs });
            times[name].push(performance.now() - start);
          }
        }
        const sorted = (values: number[]) => Float64Array.from(values).sort();
        overviews.push({ range, clickhouseMs: sorted(times.clickhouse), duckdbMs: sorted(times.duckdb) });
        log(`  p95 ClickHouse ${fmt.ms(percentile(sorted(times.clickhouse), 95))} ms, DuckDB ${fmt.ms(percentile(sorted(times.duckdb), 95))} ms`);
      }
    } finally {
      await duck.close();
      await pg.close();
    }

    log('history: embedded node (DuckDB) on the generated data…');
    const embeddedNode = await startService(folder.path, {}, 120_000);
    let embedded: StoreHistory;
    try {
      embedded = await exportAndDelete(embeddedNode, credentials.adminToken, users, log);
    } finally {
      await embeddedNode.stop();
    }
    log('history: cluster node (ClickHouse) on the copied data…');
    const cluster = await exportAndDelete(node, credentials.adminToken, users, log);
    return { events, generateSeconds, copySeconds: copy.seconds, deriveSeconds, mergeWaitSeconds, clickhouseParts, overviews, overviewMismatches, embedded, cluster };
  } finally {
    await node?.stop();
    await ch?.command(`DROP DATABASE IF EXISTS ${database}`).catch(() => undefined);
    await ch?.close();
    await nats.stop();
    folder.remove();
    nodeFolder.remove();
  }
}

import { systemClock, type Clock } from '@svc/protocol';
import { VIEWER_MINUTE_MS, type AnalyticsFilter, type AnalyticsStore, type ContestRow, type RevenueMinute, type Engagement, type FunnelCounts, type PollResult, type RevenueRow, type SponsorRow, type ViewerSeries } from '../analytics-store';
import { retireAnswers, type RetiredAnswers } from './ch-answer-retirement';
import { answeredBroadcasts, answerRows, rangeBroadcasts, unansweredRows, type AnsweredBroadcasts } from './ch-answered-broadcasts';
import { answerBroadcasts, type AnswerPanel } from './ch-broadcast-answers';
import { chNumber, serverSecond, type ChDatabase } from './ch-database';
import { knownPolls, pollResults, type PollLookup } from './ch-poll-results';
import { ChRollupDeriver, type RollupDerivationOptions } from './ch-rollup-deriver';
import { RETIRE_AFTER_SECONDS, RETIRED_ROWS_TO_DELETE, RETIRED_SHARE_TO_DELETE, retireRollupRows, type RetiredRows } from './ch-rollup-retirement';
import { dropLeftPendingTables, PendingTables, type PendingTablesState } from './ch-pending-tables';
import { rangeHours, rollupRows, type RangeHours } from './ch-rollup-reads';
import { CONTEST_HOURS, ORDER_HOURS, FUNNEL_HOURS, SESSION_HOURS, SPONSOR_HOURS, VOTE_HOURS, type ChRollup } from './ch-rollups';
import { NUMBERS_AS_NUMBERS, sortedRows } from './ch-sorted-rows';
import { sponsorPerformance } from './ch-sponsor-performance';
import { roomFor } from './query-size-settings';
import { funnel } from './ch-funnel';
import { sessionSpans } from './ch-session-spans';
import { viewerCounts, type ViewerCounts } from './ch-viewer-counts';
import { SharedReads } from './shared-reads';
import { sqlInteger } from './sql-literal';

const round2 = (value: number) => Math.round(value * 100) / 100;
/** How often a node looks for rollup rows no reader will use again (ch-rollup-retirement.ts), ms. */
export const RETIRE_INTERVAL_MS = 15 * 60_000;

/** One read of a range, shared by the panels asked for together. */
interface RangeRead {
  range: RangeHours;
  /** The tables of its pending rows. */
  tables: PendingTables;
  /** The broadcasts whose kept answers serve it, once a panel that reads answers looked them up. */
  answered?: Promise<AnsweredBroadcasts | null>;
  /** Statements whose answer two panels share (`once`), by what they read and filter (JSON). */
  shared: Map<string, Promise<unknown>>;
}

/** Orders (first reports) of one minute and currency, with their gross unrounded and their items. */
interface OrderMinute {
  at: number;
  currency: string;
  orders: number;
  gross: number;
  items: number;
}

/**
 * Settings of the overview's statements. An overview runs its panels' statements (15–22) at
 * once: one thread each keeps a server's cores busy with less switching between threads than
 * several each (the benchmark's overviews took 3–6 % less of its CPU).
 */
export const OVERVIEW_STATEMENT_SETTINGS = Object.freeze({ max_threads: 1 });

export interface ClickHouseAnalyticsOptions extends RollupDerivationOptions {
  /** Decides when the next look for retired rollup rows is due; the system clock by default. */
  clock?: Clock;
}

/**
 * The dashboard's metrics (DESIGN section 7, docs/analytics.md) in SQL over ClickHouse, with the
 * same definitions and answers as `DuckDbAnalyticsStore`. Each panel reads the hour rollups of
 * its range (ch-rollups.ts): from their tables for the hours derived since their last event, and
 * derived on the spot from `events` for the rest (the current hour, hours not derived yet, the
 * range's cut hours). `compact` derives the hours that need it.
 *
 * Copies of a retried event that ClickHouse has not merged yet never change an answer: each
 * derivation takes them out. Poll questions and options come from `polls` (content lives
 * outside ClickHouse) and are joined in Node.
 */
export class ClickHouseAnalyticsStore implements AnalyticsStore {
  /**
   * The reads of a tenant's range (and broadcast), shared by the panels of one overview (asked for
   * together; the hours depend on the tenant and range only, the pending rows on the broadcast
   * too) and released when the last of them is done.
   */
  private readonly ranges = new SharedReads<RangeRead>();
  /** Whether reads make tables of pending rows now (not for a while after the server refused one). */
  private readonly pendingTables: PendingTablesState = { pausedUntilMs: 0 };
  private readonly deriver: ChRollupDeriver;
  private readonly clock: Clock;
  /** `db` with the overview's statement settings: what panels read through. */
  private readonly reads: ChDatabase;
  private lastRetirementMs: number;

  /**
   * @param db the ClickHouse database holding `events` and the rollups (migrated by `ChDatabase.open`).
   * @param polls the polls the service knows, e.g. the content service's `PollCatalogue`.
   */
  constructor(
    private readonly db: ChDatabase,
    private readonly polls: PollLookup,
    options: ClickHouseAnalyticsOptions = {},
  ) {
    const { clock, ...derivation } = options;
    this.deriver = new ChRollupDeriver(db, polls, derivation);
    this.clock = clock ?? systemClock;
    this.reads = db.withSettings(OVERVIEW_STATEMENT_SETTINGS);
    // The first look comes an interval after start: nodes restarted together do not all look at once.
    this.lastRetirementMs = this.clock.now();
  }

  /**
   * Runs `panel` on the hours of the filter's range: whole hours derived after their last insert,
   * and the pending times, whose rows of `rollups` are derived once for all the panels of an
   * overview (ch-pending-tables.ts) and dropped when they are done (the last of them answers once
   * they are dropped).
   */
  private async read<T>(filter: AnalyticsFilter, rollups: readonly ChRollup[], panel: (read: RangeRead) => Promise<T>): Promise<T> {
    const key = JSON.stringify([filter.tenantSeq, filter.fromMs ?? null, filter.toMs ?? null, filter.broadcastId ?? null]);
    const hold = this.ranges.hold(key, async () => {
      const range = await rangeHours(this.reads, filter, this.deriver.settleSeconds);
      const scope = { tenantSeq: filter.tenantSeq, broadcastId: filter.broadcastId };
      const read: RangeRead = {
        range,
        shared: new Map(),
        tables: new PendingTables(this.reads, scope, range, (ids) => knownPolls(this.polls, filter.tenantSeq, ids), this.pendingTables, () => this.clock.now()),
      };
      // Nothing of the read runs after its last panel answered: the answers' lookup ends first.
      const release = async () => {
        await read.answered?.catch(() => undefined);
        await read.tables.drop();
      };
      return { value: read, release };
    });
    try {
      const read = await hold.value;
      await read.tables.prepare(rollups);
      return await panel(read);
    } finally {
      await hold.done();
    }
  }

  /**
   * The broadcasts whose kept answers serve the filter in its read (null: none can), looked up
   * once per read for the panels that share it (they share its broadcast): a panel reads its rows
   * and the answers from this one view of the range, never from two (an hour stored into between
   * two looks would be read twice).
   */
  private answered(filter: AnalyticsFilter, read: RangeRead): Promise<AnsweredBroadcasts | null> {
    // A country or campaign narrows rows within broadcasts: no kept answer serves it.
    if (filter.campaignId !== undefined || filter.country !== undefined) return Promise.resolve(null);
    // The broadcasts with events in the pending times are read from the sessions' pending rows.
    read.answered ??= Promise.all([rangeBroadcasts(this.reads, filter.tenantSeq, filter.broadcastId, read.range), read.tables.prepare([SESSION_HOURS])]).then(
      ([found]) => answeredBroadcasts(this.reads, filter, read.range, found),
    );
    return read.answered;
  }

  /** Runs `panel` on the filter's range (reading `rollups`) and the broadcasts whose kept answers serve it there. */
  private view<T>(
    filter: AnalyticsFilter,
    rollups: readonly ChRollup[],
    panel: (view: { range: RangeHours; answered: AnsweredBroadcasts | null; read: RangeRead }) => Promise<T>,
  ): Promise<T> {
    return this.read(filter, [], async (read) => {
      // The answers are looked up while the panel's pending rows are derived.
      const [answered] = await Promise.all([this.answered(filter, read), read.tables.prepare(rollups)]);
      return panel({ range: read.range, answered, read });
    });
  }

  /** The answer of `make` for `what` of the filter, made once per read for the panels that share it. */
  private once<T>(read: RangeRead, what: string, filter: AnalyticsFilter, make: () => Promise<T>): Promise<T> {
    const key = JSON.stringify([what, filter]);
    let made = read.shared.get(key) as Promise<T> | undefined;
    if (!made) {
      made = make();
      read.shared.set(key, made);
    }
    return made;
  }

  /** The viewers of the filter (ch-viewer-counts.ts), counted once per read for the viewer series and engagement. */
  private viewerCounts(filter: AnalyticsFilter, read: RangeRead, answered: AnsweredBroadcasts | null): Promise<ViewerCounts> {
    return this.once(read, 'viewers', filter, () => viewerCounts(this.reads, filter, read.range, answered));
  }

  /** A panel's query, however long the lists of hours it carries. */
  private query<T>(sql: string): Promise<T[]> {
    return this.reads.query<T>(sql, roomFor(sql));
  }

  async viewerSeries(filter: AnalyticsFilter): Promise<ViewerSeries> {
    const bucket = sqlInteger(VIEWER_MINUTE_MS);
    return this.view(filter, [SESSION_HOURS], async ({ range, answered, read }) => {
      const kept = (panel: AnswerPanel) => answerRows(filter.tenantSeq, answered, panel);
      // A session (in one broadcast) lasts from its first to its last event and counts in every
      // minute from the one it starts in to the one it ends in: +1 there, −1 after. The
      // broadcasts whose answers serve the range come with their sessions counted
      // (ch-broadcast-answers.ts). Its unique viewers are counted with engagement's viewers.
      const sessions = sessionSpans(rollupRows(SESSION_HOURS, filter, range, false, [], unansweredRows(answered)));
      // One pass over the sessions for their count and the changes per minute (keys sorted by the
      // server), the kept answers' beside them.
      const none = 'CAST([] AS Array(Int64))';
      const sql = `SELECT sum(counted) AS sessions, sumMap(minutes, changes) AS steps FROM (
          SELECT toInt64(1) AS counted, [first_bucket, last_bucket + ${bucket}] AS minutes, [toInt64(1), toInt64(-1)] AS changes FROM ${sessions}
          UNION ALL SELECT count, ${none}, ${none} FROM ${kept('sessions')}
          UNION ALL SELECT toInt64(0), [number], [count] FROM ${kept('step')})`;
      // (Counts and minutes in milliseconds: below 2^53.)
      // Both settled before the panel answers: nothing of the read runs after its last panel.
      const [series, counted] = await Promise.allSettled([
        this.reads.query<{ sessions: number; steps: [number[], number[]] }>(sql, { ...roomFor(sql), ...NUMBERS_AS_NUMBERS }),
        this.viewerCounts(filter, read, answered),
      ]);
      if (series.status === 'rejected') throw series.reason;
      if (counted.status === 'rejected') throw counted.reason;
      const [totals] = series.value;
      const viewers = counted.value;
      const [minutes, changes] = totals?.steps ?? [[], []];
      const steps = minutes.map((at, i) => ({ at: Number(at), change: Number(changes[i]) })).filter((step) => step.change !== 0);
      return { steps, uniqueViewers: viewers.uniqueViewers, sessions: chNumber(totals?.sessions ?? 0) };
    });
  }

  async engagement(filter: AnalyticsFilter): Promise<Engagement> {
    return this.view(filter, [SESSION_HOURS], async ({ answered, read }) => {
      const { joinedViewers, engagedViewers } = await this.viewerCounts(filter, read, answered);
      return { joinedViewers, engagedViewers };
    });
  }

  async pollResults(filter: AnalyticsFilter): Promise<PollResult[]> {
    return this.view(filter, [VOTE_HOURS], ({ range, answered }) => pollResults(this.reads, this.polls, filter, range, answered));
  }

  async sponsorPerformance(filter: AnalyticsFilter): Promise<SponsorRow[]> {
    return this.view(filter, [SPONSOR_HOURS, ORDER_HOURS], async ({ range, answered: served }) => {
      // A sponsor narrows rows within a broadcast: no kept answer serves it.
      const answered = filter.sponsorId === undefined ? served : null;
      return sponsorPerformance(
        this.reads,
        async (rollup) => rollupRows(rollup, filter, range, true, [], rollup === SPONSOR_HOURS ? unansweredRows(answered) : {}),
        { moments: answerRows(filter.tenantSeq, answered, 'moment'), exposed: answerRows(filter.tenantSeq, answered, 'exposed') },
      );
    });
  }

  /** Each order once, as its first report (time, then id) gives it: its time, currency, total and items. */
  private firstReports(filter: AnalyticsFilter, range: RangeHours): string {
    return `(SELECT argMin(order_ms, first_report) AS at_ms, argMin(currency, first_report) AS order_currency, argMin(total, first_report) AS order_total,
        argMin(items, first_report) AS order_items
      FROM ${rollupRows(ORDER_HOURS, filter, range, true)} GROUP BY order_id)`;
  }

  /**
   * The orders of the filter per minute and currency, each order once at its first report: one
   * statement for revenue and revenue over time, which an overview asks for together.
   */
  private orderMinutes(filter: AnalyticsFilter): Promise<OrderMinute[]> {
    const minute = sqlInteger(VIEWER_MINUTE_MS);
    return this.read(filter, [ORDER_HOURS], (read) =>
      this.once(read, 'order minutes', filter, async () => {
        const rows = await sortedRows(
          this.reads,
          `SELECT intDiv(at_ms, ${minute}) * ${minute} AS at, order_currency AS currency, count() AS orders, sum(order_total) AS gross, sum(order_items) AS items
           FROM ${this.firstReports(filter, read.range)} GROUP BY at, currency`,
          ['at', 'currency', 'orders', 'gross', 'items'],
        );
        return rows.map(([at, currency, orders, gross, items]) => ({ at: Number(at), currency: String(currency), orders: Number(orders), gross: Number(gross), items: Number(items) }));
      }),
    );
  }

  async revenue(filter: AnalyticsFilter): Promise<RevenueRow[]> {
    // An order reported twice counts once: its first report.
    const totals = new Map<string, RevenueRow>();
    for (const minute of await this.orderMinutes(filter)) {
      const row = totals.get(minute.currency) ?? { currency: minute.currency, orders: 0, gross: 0, items: 0 };
      row.orders += minute.orders;
      row.gross += minute.gross;
      row.items += minute.items;
      totals.set(minute.currency, row);
    }
    return [...totals.values()].map((row) => ({ ...row, gross: round2(row.gross) })).sort((a, b) => (a.currency < b.currency ? -1 : a.currency > b.currency ? 1 : 0));
  }

  async contestEntries(filter: AnalyticsFilter): Promise<ContestRow[]> {
    const rows = await this.read(filter, [], ({ range }) =>
      this.query<{ contest_id: string; contest_entries: string; entrants: string }>(
        `SELECT contest_id, sum(entries) AS contest_entries, uniqExact(viewer_key) AS entrants FROM ${rollupRows(CONTEST_HOURS, filter, range, false)} GROUP BY contest_id`,
      ),
    );
    return rows
      .map((row) => ({ contestId: row.contest_id, entries: chNumber(row.contest_entries), entrants: chNumber(row.entrants) }))
      .sort((a, b) => b.entries - a.entries || (a.contestId < b.contestId ? -1 : a.contestId > b.contestId ? 1 : 0));
  }

  async countries(filter: AnalyticsFilter): Promise<string[]> {
    const all = { ...filter, country: undefined };
    return this.view(all, [SESSION_HOURS], async ({ range, answered }) => {
      const rows = await this.query<{ country: string }>(
        `SELECT DISTINCT known AS country FROM (
           SELECT assumeNotNull(country) AS known FROM ${rollupRows(SESSION_HOURS, all, range, false, [], unansweredRows(answered))} WHERE isNotNull(country) AND country != ''
           UNION ALL SELECT text AS known FROM ${answerRows(filter.tenantSeq, answered, 'country')})`,
      );
      return rows.map((row) => row.country).sort();
    });
  }

  async revenueMinutes(filter: AnalyticsFilter): Promise<RevenueMinute[]> {
    // The orders of `revenue`, each at the time of its first report. (Sorted by the server on
    // minute then currency: the node's sort, the same for currency codes, checks it in one pass.)
    return (await this.orderMinutes(filter))
      .map(({ at, currency, orders, gross }) => ({ at, currency, orders, gross: round2(gross) }))
      .sort((a, b) => a.at - b.at || (a.currency < b.currency ? -1 : a.currency > b.currency ? 1 : 0));
  }

  async funnel(filter: AnalyticsFilter): Promise<FunnelCounts> {
    // A sponsor narrows rows within a broadcast: no kept answer serves it.
    return this.view(filter, [FUNNEL_HOURS], ({ range, answered }) => funnel(this.reads, filter, range, filter.sponsorId === undefined ? answered : null));
  }

  /** Derives the rollups of quiet hours stored into since (ch-rollup-deriver.ts); returns how many hours, in a bounded run. */
  deriveHours(): Promise<number> {
    return this.deriver.deriveQuietHours();
  }

  /**
   * Makes the answers kept per broadcast that hours derived since call for, and counts the funnel
   * sessions of answers made before their counts were kept (ch-broadcast-answers.ts), part of them
   * each time; returns how many answers it made or counted (0: nothing left to do).
   */
  answerBroadcasts(): Promise<number> {
    return answerBroadcasts(this.db);
  }

  /** Deletes the rollup rows no reader will use again, once they are many (ch-rollup-retirement.ts). */
  retireRows(afterSeconds?: number): Promise<RetiredRows[]> {
    return retireRollupRows(this.db, afterSeconds);
  }

  /** Deletes the answers kept per broadcast that no read will use again, once they are many (ch-broadcast-answers.ts). */
  async retireAnswers(afterSeconds = RETIRE_AFTER_SECONDS): Promise<RetiredAnswers> {
    return retireAnswers(this.db, await serverSecond(this.db), afterSeconds, RETIRED_SHARE_TO_DELETE, RETIRED_ROWS_TO_DELETE);
  }

  /**
   * Derives the rollups of the hours stored into since and the answers of the broadcasts they
   * hold, part of them each time; every `RETIRE_INTERVAL_MS`, retires the rows their older
   * derivations left and the answers made from them, and drops the tables of pending rows of
   * reads that never dropped them (their node died mid-read).
   */
  async compact(): Promise<void> {
    await this.deriveHours();
    // A failure to make answers (they are only a shortcut) holds up no retirement; it is reported after.
    const answering = await this.answerBroadcasts().then(
      () => null,
      (error: unknown) => error,
    );
    if (this.clock.now() - this.lastRetirementMs >= RETIRE_INTERVAL_MS) {
      this.lastRetirementMs = this.clock.now();
      // Left-over tables are only memory: a failed look is tried again at the next one, whatever the rest does.
      await dropLeftPendingTables(this.db, this.clock.now()).catch(() => 0);
      await this.retireRows();
      await this.retireAnswers();
    }
    if (answering) throw answering;
  }
}

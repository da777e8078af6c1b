import { randomInt } from 'node:crypto';
import type { PollDefinition } from '@svc/protocol';
import { chNumber, serverSecond, type ChDatabase } from './ch-database';
import type { PollLookup } from './ch-poll-results';
import { HOUR_MS } from '../analytics-store';
import { CH_ROLLUPS, derivationSql, EVENT_HOUR } from './ch-rollups';
import { roomFor } from './query-size-settings';
import { CLAIM_SECONDS } from './ch-rollup-retirement';
import { broadcastHoursSql } from './ch-broadcast-answers';
import { sqlInteger, sqlList } from './sql-literal';

export interface RollupDerivationOptions {
  /**
   * An hour is derived once no event was stored into it for this long, s (the hour being
   * watched now, which every batch touches, is read from the events until it ends).
   */
  quietSeconds?: number;
  /**
   * A derivation answers for an hour only if it began at least this long after the hour's last
   * insert, s: the time an insert's rows take to become readable after its mark was written.
   */
  settleSeconds?: number;
  /** Hours derived by one statement per rollup table at most. */
  hoursPerDerivation?: number;
  /**
   * How long a claim on hours keeps other nodes from deriving them, s (default `CLAIM_SECONDS`;
   * the retirement of older derivations counts on it: shorter only in tests).
   */
  claimSeconds?: number;
}

export const ROLLUP_QUIET_SECONDS = 60;
export const ROLLUP_SETTLE_SECONDS = 2;
const HOURS_PER_DERIVATION = 168;
/**
 * How far apart the clocks of the node that received a vote and of the node that created its
 * poll may be, with the time the poll's creation took to commit, ms: a lookup read this long
 * after a vote was received holds its poll.
 */
const NODE_CLOCK_MARGIN_MS = 60_000;
/** Derivations (of up to `hoursPerDerivation` hours each) in one run at most. */
const DERIVATIONS_PER_RUN = 4;
/** Derivation ids: random, below 2^48 so that they stay exact in JSON numbers and SQL literals. */
const DERIVATION_ID_LIMIT = 2 ** 48;

interface DirtyHour {
  tenant_seq: number;
  hour: string;
}

/**
 * Derives the rollup rows (ch-rollups.ts) of the hours stored into since their last derivation,
 * once they are quiet: one derivation per tenant and run of hours, each a statement per rollup
 * table over the hours' events (copies taken out), then a row per hour in `rollup_versions`,
 * which makes the rows readable. A node claims the hours it derives (`rollup_claims`), and the
 * others leave them alone meanwhile; two that begin at the same moment both derive them, each a
 * complete derivation of its own, and readers take one. A derivation cut short is never listed,
 * so never read, and its hours are derived again once its claim has lapsed.
 */
export class ChRollupDeriver {
  readonly settleSeconds: number;
  private readonly quietSeconds: number;
  private readonly hoursPerDerivation: number;
  private readonly claimSeconds: number;

  /**
   * @param polls the polls the service knows: votes are checked against them as hours are derived.
   */
  constructor(
    private readonly db: ChDatabase,
    private readonly polls: PollLookup,
    options: RollupDerivationOptions = {},
  ) {
    this.quietSeconds = options.quietSeconds ?? ROLLUP_QUIET_SECONDS;
    this.settleSeconds = options.settleSeconds ?? ROLLUP_SETTLE_SECONDS;
    this.hoursPerDerivation = options.hoursPerDerivation ?? HOURS_PER_DERIVATION;
    this.claimSeconds = options.claimSeconds ?? CLAIM_SECONDS;
  }

  /** Derives every quiet hour that needs it; returns how many hours it derived. */
  async deriveQuietHours(): Promise<number> {
    const startedAt = await serverSecond(this.db);
    // Hours stored into since their last derivation, quiet, and not claimed by a derivation
    // begun since their last insert (another node's, less than a claim's lifetime ago).
    const dirty = await this.db.query<DirtyHour>(
      `SELECT tenant_seq, hour FROM (
         SELECT tenant_seq, hour, touched, derived FROM (SELECT tenant_seq, hour, max(touched_at) AS touched FROM touched_hours GROUP BY tenant_seq, hour) AS t
         ANY LEFT JOIN (SELECT tenant_seq, hour, max(derived_at) AS derived FROM rollup_versions GROUP BY tenant_seq, hour) AS v USING (tenant_seq, hour)) AS d
       ANY LEFT JOIN (SELECT tenant_seq, hour, max(claimed_at) AS claimed FROM rollup_claims GROUP BY tenant_seq, hour) AS c USING (tenant_seq, hour)
       WHERE derived < touched + ${sqlInteger(this.settleSeconds)} AND touched + ${sqlInteger(this.quietSeconds)} <= ${sqlInteger(startedAt)}
         AND NOT (claimed >= touched + ${sqlInteger(this.settleSeconds)} AND claimed + ${sqlInteger(this.claimSeconds)} > ${sqlInteger(startedAt)})
       ORDER BY tenant_seq, hour DESC`,
    );
    const byTenant = new Map<number, number[]>();
    for (const row of dirty) {
      const tenant = chNumber(row.tenant_seq);
      const hours = byTenant.get(tenant) ?? [];
      hours.push(chNumber(row.hour));
      byTenant.set(tenant, hours);
    }
    // A bounded run (the rest waits for the next, with a fresh look at the claims), and a tenant
    // whose derivation fails holds up no other.
    let derived = 0;
    let budget = DERIVATIONS_PER_RUN;
    let failure: unknown = null;
    for (const [tenantSeq, hours] of byTenant) {
      try {
        for (let i = 0; i < hours.length && budget > 0; i += this.hoursPerDerivation, budget--) {
          // Newest hours first (the dashboard reads recent ones most), each derivation's in order.
          const chunk = hours.slice(i, i + this.hoursPerDerivation).reverse();
          await this.derive(tenantSeq, chunk, startedAt);
          derived += chunk.length;
        }
      } catch (error) {
        failure ??= error;
      }
      if (budget === 0) break;
    }
    if (failure) throw failure;
    return derived;
  }

  /**
   * The polls the votes of `range` name, as the lookup knows them. A derived hour is not derived
   * again unless stored into, so a poll the lookup missed (its notice lost on the way to this
   * node) would leave its votes out for good: when votes name a poll it does not know, the lookup
   * first makes sure it knows every poll that existed when the newest of them was received.
   */
  private async pollsVotedIn(tenantSeq: number, range: string): Promise<PollDefinition[]> {
    const voted = await this.db.query<{ poll_id: string; received: string }>(
      `SELECT data_poll_id AS poll_id, max(received_at_ms) AS received FROM events WHERE ${range} AND event = 'poll.voted' GROUP BY poll_id`,
    );
    const find = async () => Promise.all(voted.map(async (row) => ({ row, poll: await this.polls.find(tenantSeq, row.poll_id) })));
    let found = await find();
    const unknown = found.filter(({ poll }) => poll === undefined);
    if (unknown.length && this.polls.readAgain) {
      // Votes may name very many made-up polls: no spread into Math.max.
      const newest = unknown.reduce((latest, { row }) => Math.max(latest, chNumber(row.received)), 0);
      await this.polls.readAgain(newest + NODE_CLOCK_MARGIN_MS);
      found = await find();
    }
    return found.map(({ poll }) => poll).filter((poll): poll is PollDefinition => poll !== undefined);
  }

  /** One derivation of the tenant's `hours` (hour starts, ascending), begun at `startedAt` (server seconds). */
  private async derive(tenantSeq: number, hours: number[], startedAt: number): Promise<void> {
    const derivation = randomInt(1, DERIVATION_ID_LIMIT);
    // Other nodes leave these hours alone while this derivation runs (unless it outlives its claim).
    await this.db.command(`INSERT INTO rollup_claims (tenant_seq, hour, claimed_at) VALUES ${hours.map((hour) => `(${sqlInteger(tenantSeq)}, ${sqlInteger(hour)}, ${sqlInteger(startedAt)})`).join(', ')}`);
    const from = hours[0]!;
    const to = hours[hours.length - 1]! + HOUR_MS;
    const range = `tenant_seq = ${sqlInteger(tenantSeq)} AND timestamp_ms >= ${sqlInteger(from)} AND timestamp_ms < ${sqlInteger(to)} AND ${EVENT_HOUR} IN ${sqlList(hours)}`;
    const polls = await this.pollsVotedIn(tenantSeq, range);
    for (const rollup of CH_ROLLUPS) {
      const names = rollup.events ? ` AND event IN ${sqlList(rollup.events)}` : '';
      const events = `(SELECT * FROM events WHERE ${range}${names} LIMIT 1 BY event_id)`;
      const sql = `INSERT INTO ${rollup.table} ${derivationSql(rollup, events, sqlInteger(startedAt), sqlInteger(derivation), polls)}`;
      await this.db.command(sql, roomFor(sql));
    }
    // Which broadcasts these hours hold, for the answers kept per broadcast (ch-broadcast-answers.ts).
    await this.db.command(broadcastHoursSql(tenantSeq, hours, range, startedAt, derivation));
    // Past its claim, another node may be deriving these hours, and the rows of a derivation that
    // began that long ago are the retirement's to delete (ch-rollup-retirement.ts): never listed.
    if ((await serverSecond(this.db)) - startedAt >= this.claimSeconds) {
      throw new Error(`A derivation of ${hours.length} hour(s) of tenant ${tenantSeq} outlived its ${this.claimSeconds}-s claim; its hours are derived again.`);
    }
    const versions = hours.map((hour) => `(${sqlInteger(tenantSeq)}, ${sqlInteger(hour)}, ${sqlInteger(startedAt)}, ${sqlInteger(derivation)})`);
    await this.db.command(`INSERT INTO rollup_versions (tenant_seq, hour, derived_at, derivation) VALUES ${versions.join(', ')}`);
  }
}

import type { PollDefinition } from '@svc/protocol';
import { newestPollFirst, type AnalyticsFilter, type PollResult } from '../analytics-store';
import { chNumber, type ChDatabase } from './ch-database';
import { answerRows, unansweredRows, type AnsweredBroadcasts } from './ch-answered-broadcasts';
import { pendingEvents, rollupRows, type RangeHours } from './ch-rollup-reads';
import { VOTE_HOURS } from './ch-rollups';
import { roomFor } from './query-size-settings';
import { votesCounted } from './ch-vote-rule';

/**
 * The polls the service knows, by tenant and id. Polls are content (PostgreSQL in cluster mode),
 * not events, so the dashboard looks them up here and puts what it needs into the query.
 * The content service's `PollCatalogue` (in memory, kept current) is one.
 */
export interface PollLookup {
  find(tenantSeq: number, pollId: string): PollDefinition | undefined | Promise<PollDefinition | undefined>;
  /**
   * Makes the lookup know every poll that existed at `notBeforeMs` (epoch ms), reading them
   * again if it may have missed one since (a lookup kept current by notices that can be lost).
   * Absent: the lookup is always current.
   */
  readAgain?(notBeforeMs: number): Promise<void>;
}

/** The polls `lookup` knows among `ids`, with options (votes on others count nowhere). */
export async function knownPolls(lookup: PollLookup, tenantSeq: number, ids: Iterable<string>): Promise<PollDefinition[]> {
  const found = await Promise.all([...ids].map((id) => lookup.find(tenantSeq, id)));
  return found.filter((poll): poll is PollDefinition => poll !== undefined && poll.options.length > 0);
}

/**
 * Poll results by the vote rule: of the valid votes in the range, a vote counts when it is the
 * first (time, then event id) of its session and, when it has one, of its userId on that poll.
 * Each poll with counted votes is listed with its own question and every option (0 when nobody
 * chose it); votes on polls the lookup does not know (unknown, or deleted since) count nowhere.
 * Reads the answers kept per broadcast where they serve, and the rows of `vote_hours`
 * (ch-rollups.ts), derived or derived on the spot, for the rest.
 */
export async function pollResults(db: ChDatabase, polls: PollLookup, filter: AnalyticsFilter, range: RangeHours, answered: AnsweredBroadcasts | null): Promise<PollResult[]> {
  if (!range.derived.length && !range.pending.length) return [];
  const known = (ids: Iterable<string>) => knownPolls(polls, filter.tenantSeq, ids);
  // The votes read on the spot are checked against the polls they name (derived hours were
  // checked when derived, the pending rows derived ahead when derived).
  const events = range.pendingTables?.[VOTE_HOURS.table] === undefined ? pendingEvents(VOTE_HOURS, filter, range, false) : null;
  const namedSql = events === null ? null : `SELECT DISTINCT data_poll_id AS poll_id FROM ${events}`;
  const named = namedSql === null ? [] : await db.query<{ poll_id: string }>(namedSql, roomFor(namedSql));
  // The votes of broadcasts the range holds whole come counted (ch-broadcast-answers.ts), the
  // others' rows are counted here. The votes of a poll the lookup no longer knows (deleted
  // since) are left out afterwards.
  const votes = rollupRows(VOTE_HOURS, filter, range, false, await known(named.map((row) => row.poll_id)), unansweredRows(answered));
  const sql = answered?.answers.length
    ? `SELECT poll_id, option_index, votes FROM (${votesCounted(votes)})
       UNION ALL SELECT text AS poll_id, number AS option_index, toUInt64(count) AS votes FROM ${answerRows(filter.tenantSeq, answered, 'poll')}`
    : votesCounted(votes);
  const rows = await db.query<{ poll_id: string; option_index: string; votes: string }>(sql, roomFor(sql));
  const counted = new Map<string, Map<number, number>>();
  for (const row of rows) {
    if (!counted.has(row.poll_id)) counted.set(row.poll_id, new Map());
    counted.get(row.poll_id)!.set(chNumber(row.option_index), chNumber(row.votes));
  }
  return (await known(counted.keys()))
    .map((poll): PollResult => {
      const votesOf = counted.get(poll.id)!;
      const options = poll.options.map((option, optionIndex) => ({ optionIndex, option, votes: votesOf.get(optionIndex) ?? 0 }));
      return { pollId: poll.id, broadcastId: poll.broadcastId, createdAt: poll.createdAtMs, question: poll.question, totalVotes: options.reduce((sum, o) => sum + o.votes, 0), options };
    })
    .sort(newestPollFirst);
}

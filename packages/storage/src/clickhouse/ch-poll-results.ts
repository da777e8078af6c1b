import type { PollDefinition } from '@svc/protocol';
import { newestPollFirst, type AnalyticsFilter, type PollResult } from '../analytics-store';
import { chNumber, type ChDatabase } from './ch-database';
import { pendingEvents, rollupRows, type RangeHours } from './ch-rollup-reads';
import { VOTE_HOURS } from './ch-rollups';
import { roomFor } from './query-size-settings';

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

/**
 * Poll results by the vote rule: of the valid votes in the range, a vote counts when it is the
 * first (time, then event id) of its session and, when it has one, of its userId on that poll.
 * Each poll with counted votes is listed with its own question and every option (0 when nobody
 * chose it); votes on polls the lookup does not know (unknown, or deleted since) count nowhere.
 * Reads the rows of `vote_hours` (ch-rollups.ts), derived or derived on the spot.
 */
export async function pollResults(db: ChDatabase, polls: PollLookup, filter: AnalyticsFilter, range: RangeHours): Promise<PollResult[]> {
  if (!range.derived.length && !range.pending.length) return [];
  const known = async (ids: Iterable<string>) =>
    (await Promise.all([...ids].map((id) => polls.find(filter.tenantSeq, id)))).filter((poll): poll is PollDefinition => poll !== undefined && poll.options.length > 0);
  // The votes read on the spot are checked against the polls they name (derived hours were
  // checked when derived).
  const events = pendingEvents(VOTE_HOURS, filter, range, false);
  const namedSql = events === null ? null : `SELECT DISTINCT data_poll_id AS poll_id FROM ${events}`;
  const named = namedSql === null ? [] : await db.query<{ poll_id: string }>(namedSql, roomFor(namedSql));
  const votes = rollupRows(VOTE_HOURS, filter, range, false, await known(named.map((row) => row.poll_id)));
  // Each session's first vote on a poll (time, then event id) counts when it has no userId or is
  // also the first vote of its userId on that poll: its voter and number are among the voters'
  // first votes (ch-rollups.ts, VOTE_ORDER: a vote's number is unique among the rows read, and
  // pairing it with the voter keeps a number shared by accident from matching another voter's).
  // The winner's `voter_key` is 0 without a userId: a session's signed-in later vote never lends
  // its userId to an anonymous first one. Keys are per poll, so polls are counted apart, and the
  // votes of a poll the lookup no longer knows (deleted since) are left out afterwards.
  const sql = `SELECT poll_id, won_option AS option_index, count() AS votes
    FROM (
      SELECT any(poll_id) AS poll_id, min(first_vote) AS won, argMin(option_index, first_vote) AS won_option, argMin(voter_key, first_vote) AS voter
      FROM ${votes} GROUP BY vote_key)
    WHERE voter = 0 OR (voter, won) IN (SELECT voter_key, min(first_vote) FROM ${votes} WHERE voter_key != 0 GROUP BY voter_key)
    GROUP BY poll_id, option_index`;
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

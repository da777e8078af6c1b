import type { PollDefinition } from '@svc/protocol';
import { newestPollFirst, type AnalyticsFilter, type PollResult } from '../analytics-store';
import { chNumber, type ChDatabase } from './ch-database';
import { VOTE_HOURS, type ChRollup } from './ch-rollups';
import { sqlInteger, sqlList, sqlString } from './sql-literal';

/**
 * The polls the service knows, by tenant and id. Polls are content (PostgreSQL in cluster mode),
 * not events, so the dashboard looks them up here and puts what it needs into the query.
 * The content service's `PollCatalogue` (in memory, kept current) is one.
 */
export interface PollLookup {
  find(tenantSeq: number, pollId: string): PollDefinition | undefined | Promise<PollDefinition | undefined>;
}

/**
 * The server's default limit of a query's text (bytes). The poll query carries every known poll
 * it reads as literals (a tenant's hundreds of polls make it larger): it raises the limit to its size.
 */
const DEFAULT_MAX_QUERY_SIZE = 262_144;
const QUERY_SIZE_MARGIN = 4_096;

/** A poll without `closesAt` never closes. */
const NEVER_MS = Number.MAX_SAFE_INTEGER;

/**
 * A vote's claim as one string: poll id, broadcast id, option index (its JSON text) and label,
 * separated by U+0000, which ids and indexes cannot hold (the label, last, may hold anything):
 * one string literal per valid option, and the check is one lookup in their set.
 */
const SEPARATOR = '\u0000';
const CLAIM = `concat(poll_id, ${sqlString(SEPARATOR)}, broadcast_id, ${sqlString(SEPARATOR)}, option_raw, ${sqlString(SEPARATOR)}, option)`;
const claimOf = (pollId: string, broadcastId: string, index: number, label: string) => [pollId, broadcastId, String(index), label].join(SEPARATOR);

/** An array literal of non-negative integers (times in epoch ms). */
const integers = (values: number[]) => `[${values.map((value) => sqlInteger(Math.max(0, value))).join(', ')}]`;

/**
 * The valid votes (rule 1 of docs/analytics.md, "Poll votes") on the `polls` among `votes` (rows
 * of `vote_hours`, each the first vote of its session, userId, poll and option in an hour): the
 * poll's broadcast, an option the poll has with that option's own label, received after the poll
 * was created and before it closes.
 */
function validVotesSql(votes: string, polls: PollDefinition[]): string {
  const claims = polls.flatMap((poll) => poll.options.map((label, index) => claimOf(poll.id, poll.broadcastId, index, label)));
  const ids = `[${polls.map((poll) => sqlString(poll.id)).join(', ')}]`;
  const created = integers(polls.map((poll) => poll.createdAtMs));
  const closes = integers(polls.map((poll) => (Number.isSafeInteger(poll.closesAtMs) ? poll.closesAtMs! : NEVER_MS)));
  return `SELECT poll_id, session_id, user_id, first_vote AS first, toInt64(option_raw) AS option_index
    FROM ${votes}
    WHERE ${CLAIM} IN ${sqlList(claims)}
      AND received_ms >= transform(poll_id, ${ids}, ${created}, 0)
      AND received_ms < transform(poll_id, ${ids}, ${closes}, ${sqlInteger(NEVER_MS)})`;
}

/**
 * Poll results by the vote rule: of the valid votes in the range, a vote counts when it is the
 * first (time, then event id) of its session and, when it has one, of its userId on that poll.
 * Each poll with counted votes is listed with its own question and every option (0 when nobody
 * chose it); votes on polls the lookup does not know (unknown, or deleted since) count nowhere.
 * `rowsOf` gives the filter's rows of a rollup (ch-rollup-reads.ts).
 */
export async function pollResults(db: ChDatabase, polls: PollLookup, filter: AnalyticsFilter, rowsOf: (rollup: ChRollup) => Promise<string>): Promise<PollResult[]> {
  const votes = await rowsOf(VOTE_HOURS);
  const named = await db.query<{ poll_id: string }>(`SELECT DISTINCT poll_id FROM ${votes}`);
  const found = await Promise.all(named.map((row) => polls.find(filter.tenantSeq, row.poll_id)));
  const known = found.filter((poll): poll is PollDefinition => poll !== undefined && poll.options.length > 0);
  if (!known.length) return [];
  // In one pass over the votes: the first vote (time, then event id) of each session and of each
  // userId on a poll ("wins"); a vote counts when it won its session and, with a userId, its user.
  const sql = `SELECT poll_id, option_index, count() AS votes
    FROM (
      SELECT poll_id, won AS id, any(won_option) AS option_index, any(won_has_user) AS has_user,
        countIf(kind = 0) AS first_of_session, countIf(kind = 1) AS first_of_user
      FROM (
        SELECT poll_id, scope.1 AS kind, scope.2 AS key, min(first) AS won,
          argMin(option_index, first) AS won_option, argMin(isNotNull(user_id), first) AS won_has_user
        FROM (${validVotesSql(votes, known)})
        ARRAY JOIN if(isNull(user_id), [(0, session_id)], [(0, session_id), (1, assumeNotNull(user_id))]) AS scope
        GROUP BY poll_id, kind, key)
      GROUP BY poll_id, id)
    WHERE first_of_session > 0 AND (NOT has_user OR first_of_user > 0)
    GROUP BY poll_id, option_index`;
  // The client appends a FORMAT clause to the text.
  const size = Math.max(DEFAULT_MAX_QUERY_SIZE, Buffer.byteLength(sql) + QUERY_SIZE_MARGIN);
  const rows = await db.query<{ poll_id: string; option_index: string; votes: string }>(sql, { max_query_size: String(size) });
  const counted = new Map<string, Map<number, number>>();
  for (const row of rows) {
    if (!counted.has(row.poll_id)) counted.set(row.poll_id, new Map());
    counted.get(row.poll_id)!.set(chNumber(row.option_index), chNumber(row.votes));
  }
  return known
    .filter((poll) => counted.has(poll.id))
    .map((poll): PollResult => {
      const votesOf = counted.get(poll.id)!;
      const options = poll.options.map((option, optionIndex) => ({ optionIndex, option, votes: votesOf.get(optionIndex) ?? 0 }));
      return { pollId: poll.id, broadcastId: poll.broadcastId, createdAt: poll.createdAtMs, question: poll.question, totalVotes: options.reduce((sum, o) => sum + o.votes, 0), options };
    })
    .sort(newestPollFirst);
}

import type { PollDefinition } from '@svc/protocol';
import type { AnalyticsFilter, PollResult } from '../analytics-store';
import { dataRaw, dataString, eventConditions } from './ch-analytics-sql';
import { chNumber, type ChDatabase } from './ch-database';
import { sqlInteger, sqlString } from './sql-literal';

/**
 * The polls the service knows, by tenant and id. Polls are content (PostgreSQL in cluster mode),
 * not events, so the dashboard looks them up here and puts what it needs into the query.
 * The content service's `PollCatalogue` (in memory, kept current) is one.
 */
export interface PollLookup {
  find(tenantSeq: number, pollId: string): PollDefinition | undefined | Promise<PollDefinition | undefined>;
}

/** A poll without `closesAt` never closes. */
const NEVER_MS = Number.MAX_SAFE_INTEGER;

const int64Array = (values: number[]) => `[${values.map((value) => `toInt64(${sqlInteger(value)})`).join(', ')}]`;

/**
 * The valid votes (rule 1 of docs/analytics.md, "Poll votes") on the `polls` among the events
 * of the filter: the poll's broadcast, an option the poll has with that option's own label,
 * received after the poll was created and before it closes. One row per stored copy.
 */
function validVotesSql(filter: AnalyticsFilter, polls: PollDefinition[]): string {
  const options = polls.flatMap((poll) =>
    poll.options.map((label, index) => `(${sqlString(poll.id)}, ${sqlString(poll.broadcastId)}, ${sqlString(String(index))}, ${sqlString(label)})`),
  );
  const ids = `[${polls.map((poll) => sqlString(poll.id)).join(', ')}]`;
  const created = int64Array(polls.map((poll) => poll.createdAtMs));
  const closes = int64Array(polls.map((poll) => (Number.isSafeInteger(poll.closesAtMs) ? poll.closesAtMs! : NEVER_MS)));
  return `SELECT poll_id, session_id, user_id, toString(event_id) AS id, timestamp_ms, toInt64(option_raw) AS option_index
    FROM (
      SELECT session_id, user_id, event_id, timestamp_ms, received_at_ms, broadcast_id,
        ${dataString('pollId')} AS poll_id, ${dataRaw('optionIndex')} AS option_raw, ${dataString('optionSelected')} AS option
      FROM events WHERE ${eventConditions(filter, ['poll.voted'], false)})
    WHERE (poll_id, broadcast_id, option_raw, option) IN (${options.join(', ')})
      AND received_at_ms >= transform(poll_id, ${ids}, ${created}, toInt64(0))
      AND received_at_ms < transform(poll_id, ${ids}, ${closes}, toInt64(${sqlInteger(NEVER_MS)}))`;
}

/**
 * Poll results by the vote rule: of the valid votes in the range, a vote counts when it is the
 * first (time, then event id) of its session and, when it has one, of its userId on that poll.
 * Each poll with counted votes is listed with its own question and every option (0 when nobody
 * chose it); votes on polls the lookup does not know (unknown, or deleted since) count nowhere.
 */
export async function pollResults(db: ChDatabase, polls: PollLookup, filter: AnalyticsFilter): Promise<PollResult[]> {
  const named = await db.query<{ poll_id: string }>(
    `SELECT DISTINCT ${dataString('pollId')} AS poll_id FROM events WHERE ${eventConditions(filter, ['poll.voted'], false)}`,
  );
  const found = await Promise.all(named.map((row) => polls.find(filter.tenantSeq, row.poll_id)));
  const known = found.filter((poll): poll is PollDefinition => poll !== undefined && poll.options.length > 0);
  if (!known.length) return [];
  const votes = validVotesSql(filter, known);
  // "First": earliest time, then smallest event id.
  const first = 'argMin(id, (timestamp_ms, id))';
  const rows = await db.query<{ poll_id: string; option_index: string; votes: string }>(
    `SELECT poll_id, option_index, uniqExact(id) AS votes FROM (${votes})
     WHERE (poll_id, id) IN (SELECT poll_id, ${first} FROM (${votes}) GROUP BY poll_id, session_id)
       AND (isNull(user_id) OR (poll_id, id) IN (SELECT poll_id, ${first} FROM (${votes}) WHERE isNotNull(user_id) GROUP BY poll_id, user_id))
     GROUP BY poll_id, option_index`,
  );
  const counted = new Map<string, Map<number, number>>();
  for (const row of rows) {
    if (!counted.has(row.poll_id)) counted.set(row.poll_id, new Map());
    counted.get(row.poll_id)!.set(chNumber(row.option_index), chNumber(row.votes));
  }
  return known
    .filter((poll) => counted.has(poll.id))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .map((poll) => {
      const votesOf = counted.get(poll.id)!;
      const options = poll.options.map((option, optionIndex) => ({ optionIndex, option, votes: votesOf.get(optionIndex) ?? 0 }));
      return { pollId: poll.id, broadcastId: poll.broadcastId, question: poll.question, totalVotes: options.reduce((sum, o) => sum + o.votes, 0), options };
    });
}


import type { PollDefinition } from '@svc/protocol';
import { sqlInteger, sqlList, sqlString } from './sql-literal';

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
 * Whether a vote is valid (rule 1 of docs/analytics.md, "Poll votes") on one of `polls`: the
 * poll's broadcast, an option the poll has with that option's own label, received after the
 * poll was created and before it closes. A condition over `poll_id`, `broadcast_id`,
 * `option_raw` (the option index's JSON text), `option` and `received_at_ms`; `0` without polls.
 */
export function validVote(polls: readonly PollDefinition[]): string {
  const claims = polls.flatMap((poll) => poll.options.map((label, index) => claimOf(poll.id, poll.broadcastId, index, label)));
  if (!claims.length) return '0';
  const ids = `[${polls.map((poll) => sqlString(poll.id)).join(', ')}]`;
  const created = integers(polls.map((poll) => poll.createdAtMs));
  const closes = integers(polls.map((poll) => (Number.isSafeInteger(poll.closesAtMs) ? poll.closesAtMs! : NEVER_MS)));
  return `(${CLAIM} IN ${sqlList(claims)}
    AND received_at_ms >= transform(poll_id, ${ids}, ${created}, 0)
    AND received_at_ms < transform(poll_id, ${ids}, ${closes}, ${sqlInteger(NEVER_MS)}))`;
}

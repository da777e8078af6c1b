/**
 * The vote rule over rows of `vote_hours` (ch-rollups.ts) as a relation of the counted votes per
 * poll and option (`poll_id`, `option_index`, `votes`), and per `by` too when given (a column of
 * the rows that a poll's votes all share, such as `broadcast_id`).
 *
 * Each session's first vote on a poll (time, then event id) counts when it has no userId or is
 * also the first vote of its userId on that poll: its voter and number are among the voters'
 * first votes (ch-rollups.ts, VOTE_ORDER: a vote's number is unique among the rows read, and
 * pairing it with the voter keeps a number shared by accident from matching another voter's).
 * The winner's `voter_key` is 0 without a userId: a session's signed-in later vote never lends
 * its userId to an anonymous first one. Keys are per poll, so polls are counted apart.
 */
export function votesCounted(votes: string, by?: string): string {
  const byColumn = by === undefined ? '' : `any(${by}) AS ${by}, `;
  const byGroup = by === undefined ? '' : `${by}, `;
  return `SELECT ${byGroup}poll_id, won_option AS option_index, count() AS votes
    FROM (
      SELECT ${byColumn}any(poll_id) AS poll_id, min(first_vote) AS won, argMin(option_index, first_vote) AS won_option, argMin(voter_key, first_vote) AS voter
      FROM ${votes} GROUP BY vote_key)
    WHERE voter = 0 OR (voter, won) IN (SELECT voter_key, min(first_vote) FROM ${votes} WHERE voter_key != 0 GROUP BY voter_key)
    GROUP BY ${byGroup}poll_id, option_index`;
}

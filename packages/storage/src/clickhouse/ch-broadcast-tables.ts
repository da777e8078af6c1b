/** The tables of the answers kept per broadcast (ch-broadcast-answers.ts), named apart for the migrations. */

/** Per derivation, the broadcasts with events in each hour it derived. */
export const BROADCAST_HOURS_TABLE = 'broadcast_hours';
/** What the panels keep per broadcast, each row of one panel (`panel`) and answer (`answer`: one broadcast, one signature). */
export const BROADCAST_ANSWERS_TABLE = 'broadcast_answers';
/** The answers made: per broadcast, the signature each was made from (written once the answer's rows are all in). */
export const BROADCAST_ANSWERED_TABLE = 'broadcast_answered';

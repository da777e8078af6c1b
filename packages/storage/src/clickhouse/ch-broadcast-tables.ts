/** The tables of the answers kept per broadcast (ch-broadcast-answers.ts), named apart for the migrations. */

/** Per derivation, the broadcasts with events in each hour it derived. */
export const BROADCAST_HOURS_TABLE = 'broadcast_hours';
/** Poll results per broadcast: each counted vote's poll and option (the vote rule over the broadcast's rows). */
export const BROADCAST_POLL_VOTES_TABLE = 'broadcast_poll_votes';

import type { ClickHouseSettings } from '@clickhouse/client';

// ClickHouse 18.16 limits a query's text to 256 KiB and its syntax tree to 50,000 nodes by
// default; statements that carry lists (a batch's ids, every known poll, runs of hours) raise
// the limits they need.

/** Settings of the statements that list a batch's ids: the defaults hold about 6,000, a writer batch up to 10^5. */
export const ID_LIST_SETTINGS: ClickHouseSettings = { max_query_size: String(256 * 2 ** 20), max_ast_elements: '10000000', max_expanded_ast_elements: '10000000' };

/** The server's default limit of a query's text (bytes). */
const DEFAULT_MAX_QUERY_SIZE = 262_144;
const QUERY_SIZE_MARGIN = 4_096;

/** Settings that let the server read `sql` whatever its length (the client appends a FORMAT clause). */
export function roomFor(sql: string): ClickHouseSettings {
  return { max_query_size: String(Math.max(DEFAULT_MAX_QUERY_SIZE, Buffer.byteLength(sql) + QUERY_SIZE_MARGIN)) };
}

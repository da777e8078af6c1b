import type { ClickHouseSettings } from '@clickhouse/client';

/**
 * Settings of the statements that list a batch's ids: 18.16's defaults (a query of 256 KiB,
 * 50,000 syntax tree nodes) hold about 6,000 ids, and a writer batch holds up to 10^5.
 */
export const ID_LIST_SETTINGS: ClickHouseSettings = { max_query_size: String(256 * 2 ** 20), max_ast_elements: '10000000', max_expanded_ast_elements: '10000000' };

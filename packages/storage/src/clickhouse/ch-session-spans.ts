import { VIEWER_MINUTE_MS } from '../analytics-store';
import { sqlInteger } from './sql-literal';

const MINUTE = sqlInteger(VIEWER_MINUTE_MS);

/**
 * Per session (in one broadcast) of the `session_hours` rows `rows`, as a relation: the minutes
 * of its first and last events (`first_bucket`, `last_bucket`), its viewer (that of its first
 * event: a session keeps one userId; DuckDB takes any of its rows) and whether it joined; with
 * `broadcast_id` too when `withBroadcast`.
 */
export function sessionSpans(rows: string, withBroadcast = false): string {
  return `(SELECT ${withBroadcast ? 'any(broadcast_id) AS broadcast_id, ' : ''}intDiv(min(first_ms), ${MINUTE}) * ${MINUTE} AS first_bucket,
      intDiv(max(last_ms), ${MINUTE}) * ${MINUTE} AS last_bucket, argMin(viewer_key, first_ms) AS viewer, max(joined) AS session_joined
    FROM ${rows} GROUP BY session_key)`;
}

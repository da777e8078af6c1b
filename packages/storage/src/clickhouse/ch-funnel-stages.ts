/**
 * Per session (`session_key`, and `by` when given: a column its rows share, such as
 * `broadcast_id`) of the `funnel_hours` rows `rows`: the steps of the funnel it reached, `s1` to
 * `s4` (the first product view, then the first of each later step at or after the step before).
 */
export function funnelStages(rows: string, by?: string): string {
  const byColumn = by === undefined ? '' : `${by}, `;
  return `SELECT ${byColumn}session_key, notEmpty(views) AS s1, arrayReduce('min', views) AS t1,
      arrayFilter(t -> t >= t1, adds) AS after1, s1 AND notEmpty(after1) AS s2, arrayReduce('min', after1) AS t2,
      arrayFilter(t -> t >= t2, starts) AS after2, s2 AND notEmpty(after2) AS s3, arrayReduce('min', after2) AS t3,
      s3 AND notEmpty(arrayFilter(t -> t >= t3, completions)) AS s4
    FROM (
      SELECT ${byColumn}session_key, groupArrayArray(viewed) AS views, groupArrayArray(added) AS adds, groupArrayArray(started) AS starts,
        groupArrayArray(completed) AS completions
      FROM ${rows} GROUP BY ${byColumn}session_key)`;
}

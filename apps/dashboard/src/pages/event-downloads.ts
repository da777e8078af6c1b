/** The export endpoint's URL for the filters `q` in a streamed format (CSV cells made spreadsheet-safe). */
export function exportUrl(q: URLSearchParams, format: 'csv' | 'ndjson'): string {
  const url = new URLSearchParams(q);
  url.set('format', format);
  if (format === 'csv') url.set('csvSafe', 'true');
  return `/v1/analytics/events?${url}`;
}

/**
 * Saves every event of the filters as one JSON array. The export streams NDJSON (its JSON
 * format is paged): its lines are already JSON values, so they are joined, not re-encoded.
 * The file is named as the server names the export, with `.json`.
 */
export async function downloadJson(q: URLSearchParams): Promise<void> {
  const response = await fetch(exportUrl(q, 'ndjson'), { credentials: 'same-origin' });
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  const lines = (await response.text()).split('\n').filter((line) => line.trim() !== '');
  const disposition = /filename="([^"]+)\.ndjson"/.exec(response.headers.get('content-disposition') ?? '');
  const name = `${disposition?.[1] ?? 'svc-events'}.json`;
  const blob = new Blob([`[${lines.join(',\n')}]\n`], { type: 'application/json' });
  const href = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = href;
  link.download = name;
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  // The download has its own copy once started; the URL is no longer needed after this turn.
  setTimeout(() => URL.revokeObjectURL(href), 0);
}

import { uuidv7 } from 'uuidv7';
import { EVENT_NAMES } from '@svc/protocol';
import { CLUSTER_ADMIN_TOKEN, CLUSTER_API_KEY } from './cluster-engines';
import { validEvent } from './events-fixture';

/** Events per request: the most one request may carry. */
export const BATCH_SIZE = 500;
/** How long a client waits before sending a refused or unanswered batch again. */
const RETRY_DELAY_MS = 200;
/** How long one request may take before the client gives up on that attempt (and retries). */
const REQUEST_TIMEOUT_MS = 30_000;

export type Batch = Array<Record<string, unknown>>;

/** `count` valid events of every type (so the export meets quoted CSV fields), timestamped now. */
export function makeBatch(count: number, userOf: (i: number) => string, at = new Date()): Batch {
  return Array.from({ length: count }, (_, i) =>
    validEvent(EVENT_NAMES[i % EVENT_NAMES.length]!, at, { eventId: uuidv7(), userId: userOf(i) }));
}

export interface IngestAnswer {
  accepted: number;
  duplicates: number;
  rejected: unknown[];
}

/** Sends `batch` once to `url`: the answer, or the status / error that refused it. */
export async function sendOnce(url: string, batch: Batch, apiKey = CLUSTER_API_KEY): Promise<{ ok: true; answer: IngestAnswer } | { ok: false; why: string; status?: number; retryAfter?: string | null }> {
  try {
    const response = await fetch(`${url}/v1/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-svc-api-key': apiKey },
      body: JSON.stringify({ sentAt: new Date().toISOString(), events: batch }),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const text = await response.text();
    if (response.status === 200) return { ok: true, answer: JSON.parse(text) as IngestAnswer };
    return { ok: false, why: `${response.status} ${text.slice(0, 200)}`, status: response.status, retryAfter: response.headers.get('retry-after') };
  } catch (error) {
    return { ok: false, why: String(error) };
  }
}

/**
 * Sends `batch` as the SDK does: the same batch again after a refusal (5xx, 429) or a lost
 * connection, until one node acknowledges it; `urls()` names the nodes to try in turn, so a
 * client moves to another node when its node died. A 4xx other than 429 is a test failure.
 */
export async function sendUntilAcknowledged(urls: () => string[], batch: Batch, deadlineMs = 120_000, apiKey = CLUSTER_API_KEY): Promise<IngestAnswer> {
  const deadline = Date.now() + deadlineMs;
  for (let attempt = 0; ; attempt++) {
    const targets = urls();
    const result = await sendOnce(targets[attempt % targets.length]!, batch, apiKey);
    if (result.ok) return result.answer;
    if (/^4\d\d /.test(result.why) && !result.why.startsWith('429')) throw new Error(`batch refused: ${result.why}`);
    if (Date.now() > deadline) throw new Error(`batch not acknowledged within ${deadlineMs} ms; last: ${result.why}`);
    await new Promise((resolve) => setTimeout(resolve, RETRY_DELAY_MS));
  }
}

export const adminHeaders = { authorization: `Bearer ${CLUSTER_ADMIN_TOKEN}` };

/** One admin API call to node `url`: its status and its JSON body (`{}` when empty). */
export async function adminCall(url: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { ...adminHeaders, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

/** The eventIds of a full NDJSON export from node `url` (with `query`), in the order exported. */
export async function exportedIdsNdjson(url: string, query = '', headers: Record<string, string> = adminHeaders): Promise<string[]> {
  const response = await fetch(`${url}/v1/analytics/events?format=ndjson${query}`, { headers });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`NDJSON export: ${response.status} ${text.slice(0, 300)}`);
  return text.split('\n').filter(Boolean).map((line) => (JSON.parse(line) as { eventId: string }).eventId);
}

/** The eventIds of a full CSV export from node `url` (first column), parsed as RFC 4180. */
export async function exportedIdsCsv(url: string, query = ''): Promise<string[]> {
  const response = await fetch(`${url}/v1/analytics/events?format=csv${query}`, { headers: adminHeaders });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`CSV export: ${response.status} ${text.slice(0, 300)}`);
  const rows = parseCsv(text);
  if (rows[0]?.[0] !== 'eventId') throw new Error(`CSV export: unexpected header ${JSON.stringify(rows[0])}`);
  return rows.slice(1).map((row) => row[0]!);
}

/** RFC 4180 rows (quoted fields may hold commas, quotes and line breaks). */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') (field += '"'), i++;
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') row.push(field), (field = '');
    else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(field), rows.push(row), (row = []), (field = '');
    } else field += c;
  }
  if (field !== '' || row.length > 0) row.push(field), rows.push(row);
  return rows;
}

/** Ids that occur more than once in `ids`. */
export function repeated(ids: string[]): string[] {
  const seen = new Set<string>();
  return ids.filter((id) => (seen.has(id) ? true : (seen.add(id), false)));
}

/**
 * How an export `ids` differs from what it should hold: ids listed more than once, expected
 * ids missing, ids never sent. All three empty when the export is right.
 */
export function exportProblems(ids: string[], expected: Set<string>): { repeated: string[]; missing: string[]; unexpected: string[] } {
  const listed = new Set(ids);
  return {
    repeated: repeated(ids),
    missing: [...expected].filter((id) => !listed.has(id)),
    unexpected: [...listed].filter((id) => !expected.has(id)),
  };
}

/** `exportProblems` as counts with a few examples, for a readable failure. */
export function summarized(problems: Record<string, string[]>): Record<string, string> {
  return Object.fromEntries(Object.entries(problems).map(([name, ids]) => [name, ids.length ? `${ids.length}, e.g. ${ids.slice(0, 3).join(' ')}` : 'none']));
}

/** The number of events a full export of node `url` would hold now (`X-Total-Count`). */
export async function exportedCount(url: string, query = ''): Promise<number> {
  const response = await fetch(`${url}/v1/analytics/events?format=ndjson&limit=1${query}`, { headers: adminHeaders, method: 'HEAD' }).catch(() => null);
  if (response?.status === 200 && response.headers.get('x-total-count')) return Number(response.headers.get('x-total-count'));
  return (await exportedIdsNdjson(url, query)).length;
}

/** Polls `check` until it holds, failing with `what` after `withinMs`. */
export async function until(what: string, check: () => Promise<boolean> | boolean, withinMs: number, intervalMs = 250): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/**
 * Sends `batches` with `clients` clients at once, each taking the next batch and sending it with
 * `send` until acknowledged; a per-event rejection is a test failure. `onAcknowledged` runs after
 * each acknowledged batch (with how many were). Returns the acknowledged event ids.
 */
export async function ingestConcurrently(
  batches: Batch[],
  clients: number,
  send: (batch: Batch, index: number) => Promise<IngestAnswer>,
  onAcknowledged: (done: number) => void | Promise<void> = () => {},
): Promise<Set<string>> {
  const acknowledged = new Set<string>();
  let next = 0;
  let done = 0;
  const client = async () => {
    for (let k = next++; k < batches.length; k = next++) {
      const answer = await send(batches[k]!, k);
      if (answer.rejected.length > 0) throw new Error(`events rejected: ${JSON.stringify(answer.rejected.slice(0, 3))}`);
      for (const e of batches[k]!) acknowledged.add(String(e.eventId));
      await onAcknowledged(++done);
    }
  };
  await Promise.all(Array.from({ length: clients }, client));
  return acknowledged;
}

/** What {@link exportedOnceProblems} answers when the export is right. */
export const NO_EXPORT_PROBLEMS = { repeated: 'none', missing: 'none', unexpected: 'none' };

/**
 * How node `url`'s export (with `query`) differs from `expected`, each once (summarized): read
 * once it holds as many events or after `withinMs`, then again after a pause in which a late
 * writer could still add a copy. {@link NO_EXPORT_PROBLEMS} when right.
 */
export async function exportedOnceProblems(url: string, expected: Set<string>, withinMs: number, query = ''): Promise<Record<string, string>> {
  // Not all readable in time: the comparison says which are missing.
  await until('every expected event is readable', async () => (await exportedCount(url, query)) >= expected.size, withinMs, 1_000).catch(() => {});
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  return summarized(exportProblems(await exportedIdsNdjson(url, query), expected));
}

import { SvcError } from '@svc/protocol';

export interface StoredCheckOptions {
  /** The service's REST base. */
  url: string;
  adminToken: string;
  broadcastId: string;
  /** The ids that must each be stored once. */
  ids: string[];
  /** No event of `ids` is older than this on this machine's clock (ms since the epoch). */
  sinceMs: number;
  /** How long the stored events may take to become readable (a cluster's writers lag a little). */
  waitMs: number;
  progress?: (line: string) => void;
}

export interface StoredCheck {
  checked: number;
  /** Acknowledged ids the export does not hold. */
  missing: number;
  /** Acknowledged ids the export holds more than once. */
  repeated: number;
  /** A few of the ids missing or repeated, to look up. */
  examples: string[];
}

/** Pause between reads while some events are not readable yet, and before the last read. */
const POLL_MS = 1_000;
const SETTLE_MS = 2_000;
/** Margin before the first event's time: the server corrects event times by the client's clock skew. */
const WINDOW_MARGIN_MS = 60_000;
/** Longest wait a `Retry-After` may ask for between reads. */
const MAX_RETRY_AFTER_MS = 5_000;
/** A read may take at least this long whatever is left of the wait (a large broadcast streams a while). */
const MIN_READ_TIMEOUT_MS = 30_000;
/** Answers after which a read is tried again. */
const RETRYABLE_STATUSES = new Set([429, 502, 503, 504]);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Reads the broadcast's events back through the raw export (admin token) and checks that every
 * acknowledged id is there exactly once: "nothing acknowledged was lost, nothing doubled". Reads
 * again while some are missing (not readable yet) until `waitMs` has passed, and once more after
 * a pause when none is, so that a copy a late writer adds is seen. Refusals that pass (503 with
 * `Retry-After`, a node gone) are read again; a read that never succeeds is a `storage_unavailable`.
 */
export async function checkStored(options: StoredCheckOptions): Promise<StoredCheck> {
  const deadline = Date.now() + options.waitMs;
  const base = options.url.replace(/\/+$/, '');
  const since = Math.min(options.sinceMs, options.sinceMs + (await serverClockAhead(base)));
  const query = new URLSearchParams({ format: 'ndjson', broadcastId: options.broadcastId, from: new Date(since - WINDOW_MARGIN_MS).toISOString() });
  let settled = false;
  for (;;) {
    const counts = await readIds(`${base}/v1/analytics/events?${query}`, options.adminToken, deadline);
    const missing = options.ids.filter((id) => !counts.has(id));
    const repeated = options.ids.filter((id) => (counts.get(id) ?? 0) > 1);
    if ((missing.length === 0 && settled) || Date.now() >= deadline) {
      return { checked: options.ids.length, missing: missing.length, repeated: repeated.length, examples: [...missing, ...repeated].slice(0, 5) };
    }
    if (missing.length === 0) settled = true;
    else options.progress?.(`${missing.length} of ${options.ids.length} acknowledged events not readable yet…`);
    await sleep(settled ? SETTLE_MS : POLL_MS);
  }
}

/** How far the server's clock is ahead of this machine's (its `Date` header; 0 when unknown). */
async function serverClockAhead(base: string): Promise<number> {
  try {
    const response = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(MIN_READ_TIMEOUT_MS) });
    await response.arrayBuffer();
    const date = Date.parse(response.headers.get('date') ?? '');
    return Number.isFinite(date) ? date - Date.now() : 0;
  } catch {
    return 0;
  }
}

/** Each event id of the export at `url`, with how often it is listed; reads again after passing refusals. */
async function readIds(url: string, adminToken: string, deadline: number): Promise<Map<string, number>> {
  for (;;) {
    let why: string;
    let waitMs = POLL_MS;
    try {
      const response = await fetch(url, { headers: { authorization: `Bearer ${adminToken}` }, signal: AbortSignal.timeout(Math.max(MIN_READ_TIMEOUT_MS, deadline - Date.now())) });
      const text = await response.text();
      if (response.status === 200) {
        const counts = new Map<string, number>();
        for (const line of text.split('\n')) {
          if (!line) continue;
          const id = (JSON.parse(line) as { eventId: string }).eventId;
          counts.set(id, (counts.get(id) ?? 0) + 1);
        }
        return counts;
      }
      why = `${response.status} ${text.slice(0, 200)}`;
      if (!RETRYABLE_STATUSES.has(response.status)) throw new SvcError(response.status === 401 || response.status === 403 ? 'unauthorized' : 'validation_failed', `--check: the export answered ${why}`);
      const retryAfter = Number(response.headers.get('retry-after'));
      if (retryAfter > 0) waitMs = Math.min(MAX_RETRY_AFTER_MS, retryAfter * 1000);
    } catch (error) {
      if (error instanceof SvcError) throw error;
      why = String(error);
    }
    if (Date.now() + waitMs > deadline) throw new SvcError('storage_unavailable', `--check: the export could not be read (last: ${why}).`);
    await sleep(waitMs);
  }
}

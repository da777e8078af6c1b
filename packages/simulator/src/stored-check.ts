export interface StoredCheckOptions {
  /** The service's REST base. */
  url: string;
  adminToken: string;
  broadcastId: string;
  /** The ids that must each be stored once. */
  ids: string[];
  /** No event of `ids` is older than this (ms since the epoch): the export starts a minute before. */
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

const POLL_MS = 1_000;

/**
 * Reads the broadcast's events back through the raw export (admin token) and checks that every
 * acknowledged id is there exactly once: "nothing acknowledged was lost, nothing doubled". Reads
 * again until `waitMs` has passed while some are missing (they may not be readable yet).
 */
export async function checkStored(options: StoredCheckOptions): Promise<StoredCheck> {
  const deadline = Date.now() + options.waitMs;
  const base = options.url.replace(/\/+$/, '');
  const query = new URLSearchParams({ format: 'ndjson', broadcastId: options.broadcastId, from: new Date(options.sinceMs - 60_000).toISOString() });
  for (;;) {
    const response = await fetch(`${base}/v1/analytics/events?${query}`, { headers: { authorization: `Bearer ${options.adminToken}` } });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`The export answered ${response.status}: ${text.slice(0, 300)}`);
    const seen = new Map<string, number>();
    for (const line of text.split('\n')) {
      if (!line) continue;
      const id = (JSON.parse(line) as { eventId: string }).eventId;
      seen.set(id, (seen.get(id) ?? 0) + 1);
    }
    const missing = options.ids.filter((id) => !seen.has(id));
    const repeated = options.ids.filter((id) => (seen.get(id) ?? 0) > 1);
    if (missing.length === 0 || Date.now() >= deadline) {
      return { checked: options.ids.length, missing: missing.length, repeated: repeated.length, examples: [...missing, ...repeated].slice(0, 5) };
    }
    options.progress?.(`${missing.length} of ${options.ids.length} acknowledged events not readable yet…`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

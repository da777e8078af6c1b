import { request } from 'undici';
import { uuidv7 } from 'uuidv7';
import type { ChDatabase } from '@svc/storage';

/** How often the probe sends one event, and how often it looks for the events not seen yet. */
export const PROBE_INTERVAL_MS = 250;
export const LOOK_INTERVAL_MS = 100;

/**
 * Ingest acknowledgement → queryable: while the load runs, one event every PROBE_INTERVAL_MS
 * is POSTed alone with an id of its own (outside the load's connections, without waiting for
 * the previous probe's answer); from its 200 answer, ClickHouse is asked every
 * LOOK_INTERVAL_MS which probe events it holds. The lag of each is the time from its answer
 * to the first look that found it (so it is over-estimated by up to LOOK_INTERVAL_MS).
 */
export class QueryableLag {
  private readonly acked = new Map<string, number>();
  readonly lagsMs: number[] = [];
  failures = 0;
  private stopping = false;
  private drained = false;
  private readonly sinceMs = Date.now() - 60_000;
  private sending: Promise<void> | null = null;
  private looking: Promise<void> | null = null;

  constructor(
    private readonly origin: string,
    private readonly apiKey: string,
    private readonly db: ChDatabase,
  ) {}

  start(): void {
    this.sending = this.send();
    this.looking = this.look();
  }

  /** Stops probing and waits at most `drainMs` for the probes still in flight to show up. */
  async stop(drainMs: number): Promise<{ missing: number }> {
    this.stopping = true;
    await this.sending;
    const deadline = performance.now() + drainMs;
    while (this.acked.size && performance.now() < deadline) await sleep(LOOK_INTERVAL_MS);
    this.drained = true;
    await this.looking;
    return { missing: this.acked.size };
  }

  /** Sends a probe every PROBE_INTERVAL_MS without waiting for the one before (answers take longer under load). */
  private async send(): Promise<void> {
    const inFlight = new Set<Promise<void>>();
    while (!this.stopping) {
      const next = performance.now() + PROBE_INTERVAL_MS;
      const probe = this.probe();
      inFlight.add(probe);
      void probe.finally(() => inFlight.delete(probe));
      await sleep(Math.max(0, next - performance.now()));
    }
    await Promise.all(inFlight);
  }

  private async probe(): Promise<void> {
    const id = uuidv7();
    const ts = new Date().toISOString();
    const body = `{"sentAt":"${ts}","events":[{"event":"broadcast.joined","eventId":"${id}","userId":"probe","sessionId":"svc_01JBENCHprobe0","broadcastId":"b-1","timestamp":"${ts}","data":{}}]}`;
    try {
      const answer = await request(`${this.origin}/v1/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-svc-api-key': this.apiKey },
        body,
      });
      const text = await answer.body.text();
      if (answer.statusCode === 200 && (JSON.parse(text) as { accepted?: number }).accepted === 1) this.acked.set(id, performance.now());
      else this.failures++;
    } catch {
      this.failures++;
    }
  }

  private async look(): Promise<void> {
    while (!this.drained) {
      const next = performance.now() + LOOK_INTERVAL_MS;
      if (this.acked.size) {
        // Ids this probe made (uuidv7: hex digits and dashes only), checked before they go into SQL.
        const ids = [...this.acked.keys()].filter((id) => /^[0-9a-f-]{36}$/.test(id));
        try {
          const rows = await this.db.query<{ id: string }>(
            `SELECT DISTINCT toString(event_id) AS id FROM events WHERE timestamp_ms >= ${this.sinceMs} AND user_id = 'probe' AND event_id IN (${ids.map((id) => `'${id}'`).join(', ')})`,
          );
          const seen = performance.now();
          for (const { id } of rows) {
            const at = this.acked.get(id);
            if (at === undefined) continue;
            this.lagsMs.push(seen - at);
            this.acked.delete(id);
          }
        } catch {
          // The next look tries again.
        }
      }
      await sleep(Math.max(0, next - performance.now()));
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

import type { IngestResult, RejectedEvent } from '@svc/protocol';
import type { Tenant } from '@svc/storage';

/**
 * Ingest's limits of one request (`MAX_EVENTS_PER_REQUEST`, `MAX_REQUEST_BYTES` of
 * `@svc/ingest`, DESIGN section 6), repeated here because realtime does not depend on ingest.
 */
export const MAX_EVENTS_PER_INGEST = 500;
export const MAX_INGEST_BYTES = 512 * 1024;
/** What `{"events":[]}` adds to the events of a batch, and each comma between them. */
const BATCH_OVERHEAD_BYTES = 13;

/** Where the coalescer sends its requests: the gateway's event sink. */
export interface IngestSink {
  ingest(request: { tenant: Tenant; source: 'client' | 'server'; country: string | null; body: unknown; bodyBytes: number; receivedAtMs?: number }): Promise<IngestResult>;
}

/** One event the gateway writes on its own (a vote, an entry, the server's `broadcast.left`). */
export interface SingleEventWrite {
  tenant: Tenant;
  source: 'client' | 'server';
  /** The request's country, which ingest gives every event of a request. */
  country: string | null;
  /** The complete event, with its own eventId and timestamp. */
  event: Record<string, unknown>;
  /** When the gateway took it in (a vote: when it checked the poll open); ingest checks it at that time, not after the wait here. */
  receivedAtMs?: number;
}

export interface IngestCoalescerLimits {
  /** Events in one request; default `MAX_EVENTS_PER_INGEST` (500). */
  maxEvents: number;
  /** Bytes of one request's JSON body; default `MAX_INGEST_BYTES` (512 KiB). */
  maxBytes: number;
}

interface Waiting {
  write: SingleEventWrite;
  bytes: number;
  resolve(rejection: RejectedEvent | null): void;
  reject(error: unknown): void;
}

interface Lane {
  inFlight: boolean;
  queue: Waiting[];
}

/**
 * Coalesces the gateway's single-event writes: per tenant, source and country, an event is
 * sent at once when no request of that key is under way (no added latency at low load);
 * otherwise it waits, and when the request under way settles, everything that waited goes as
 * one `{ events: [...] }` request (up to the limits; the rest waits for the next). A burst of
 * votes thus costs a few ingest requests (one event-log publish and one `poll.voted` notice
 * each) instead of one per vote. Each caller learns its own event's fate: its rejection, by
 * index in the batch, or the error the whole request failed with.
 */
export class IngestCoalescer {
  private readonly lanes = new Map<string, Lane>();
  private readonly pending = new Set<Promise<unknown>>();
  private readonly limits: IngestCoalescerLimits;

  constructor(
    private readonly sink: IngestSink,
    limits: Partial<IngestCoalescerLimits> = {},
  ) {
    this.limits = { maxEvents: MAX_EVENTS_PER_INGEST, maxBytes: MAX_INGEST_BYTES, ...limits };
  }

  /** Writes one event; resolves with its rejection (null once stored or a duplicate), rejects when its request failed. */
  write(write: SingleEventWrite): Promise<RejectedEvent | null> {
    const key = `${write.tenant.seq}|${write.source}|${write.country ?? ''}`;
    let lane = this.lanes.get(key);
    if (!lane) this.lanes.set(key, (lane = { inFlight: false, queue: [] }));
    const promise = new Promise<RejectedEvent | null>((resolve, reject) => {
      lane.queue.push({ write, bytes: Buffer.byteLength(JSON.stringify(write.event)), resolve, reject });
    });
    this.pending.add(promise);
    void promise.catch(() => undefined).finally(() => this.pending.delete(promise));
    if (!lane.inFlight) void this.send(key, lane);
    return promise;
  }

  /** Resolves once every event written before the call has been sent and answered. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.pending]);
  }

  /** Sends what waits in a lane as one request, then the next, until the lane is empty. */
  private async send(key: string, lane: Lane): Promise<void> {
    lane.inFlight = true;
    while (lane.queue.length) {
      const batch = this.take(lane.queue);
      const first = batch[0]!.write;
      // The gateway builds these events from bounded fields: ingest need not measure them again (bodyBytes 0, as for one event).
      const body = batch.length === 1 ? first.event : { events: batch.map((w) => w.write.event) };
      // One time for the request: the earliest the gateway took one of its events in.
      const times = batch.flatMap((w) => (w.write.receivedAtMs === undefined ? [] : [w.write.receivedAtMs]));
      const receivedAtMs = times.length ? { receivedAtMs: Math.min(...times) } : {};
      try {
        const result = await this.sink.ingest({ tenant: first.tenant, source: first.source, country: first.country, body, bodyBytes: 0, ...receivedAtMs });
        const byIndex = new Map(result.rejected.map((r) => [r.index, r]));
        batch.forEach((waiting, index) => {
          const rejection = byIndex.get(index);
          waiting.resolve(rejection ? { ...rejection, index: 0 } : null);
        });
      } catch (error) {
        for (const waiting of batch) waiting.reject(error);
      }
    }
    lane.inFlight = false;
    this.lanes.delete(key);
  }

  /** The first waiting events that fit in one request (at least one). */
  private take(queue: Waiting[]): Waiting[] {
    let count = 0;
    let bytes = BATCH_OVERHEAD_BYTES;
    while (count < queue.length && count < this.limits.maxEvents) {
      const next = queue[count]!.bytes + (count ? 1 : 0);
      if (count && bytes + next > this.limits.maxBytes) break;
      bytes += next;
      count++;
    }
    return queue.splice(0, count);
  }
}

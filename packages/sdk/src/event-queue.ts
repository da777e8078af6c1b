import { localStore } from './local-store';

/** Events kept for sending at most; the oldest go first when it overflows. */
export const MAX_QUEUED_EVENTS = 1_000;
/** Retry delays grow from 1 s to 30 s (doubling), each drawn at random below that cap (full jitter). */
export const RETRY_MIN_MS = 1_000;
export const RETRY_MAX_MS = 30_000;
/** Events are sent in batches of at most this many… */
export const BATCH_SIZE = 100;
/** …and at most this many bytes of JSON (the gateway takes messages up to 64 KB). */
export const BATCH_MAX_BYTES = 48 * 1024;

export interface QueuedEvent {
  eventId: string;
  [field: string]: unknown;
}

/** Sends a batch; resolves with the ids to drop (stored, duplicate or rejected for good), or throws to retry. */
export type BatchSender = (events: QueuedEvent[]) => Promise<string[]>;

export function backoffDelay(attempt: number, random: () => number = Math.random): number {
  const cap = Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** attempt);
  return Math.max(RETRY_MIN_MS / 4, Math.floor(random() * cap));
}

/**
 * Events waiting to be sent, kept in localStorage so that a closed tab or a lost network
 * loses nothing. Retries reuse each event's `eventId`, so the server stores it once.
 */
export class EventQueue {
  private events: QueuedEvent[] = [];
  private sending = false;
  private attempt = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;

  /**
   * Each page keeps its own queue (`<prefix><tabId>`), so two tabs never overwrite each
   * other; queues left by closed tabs are adopted at start. A tab still alive may then send
   * some events twice, which the server deduplicates by eventId.
   */
  constructor(
    prefix: string,
    tabId: string,
    private readonly send: BatchSender,
  ) {
    this.storageKey = `${prefix}${tabId}`;
    for (const key of localStore.keys().filter((k) => k.startsWith(prefix) || k === prefix.replace(/:$/, ''))) {
      try {
        const saved = JSON.parse(localStore.get(key) ?? '[]') as unknown;
        if (Array.isArray(saved)) this.events.push(...saved.filter((e): e is QueuedEvent => typeof (e as QueuedEvent)?.eventId === 'string'));
      } catch {
        // A damaged queue is dropped.
      }
      if (key !== this.storageKey) localStore.remove(key);
    }
    this.save();
    if (this.events.length) this.schedule(0);
  }

  private readonly storageKey: string;

  get size(): number {
    return this.events.length;
  }

  snapshot(): QueuedEvent[] {
    return [...this.events];
  }

  push(event: QueuedEvent): void {
    this.events.push(event);
    if (this.events.length > MAX_QUEUED_EVENTS) this.events.splice(0, this.events.length - MAX_QUEUED_EVENTS);
    this.save();
    this.schedule(0);
  }

  /** Removes events known to have reached the server. */
  remove(ids: Iterable<string>): void {
    const gone = new Set(ids);
    if (!gone.size) return;
    this.events = this.events.filter((e) => !gone.has(e.eventId));
    this.save();
  }

  /** Sends now (e.g. the network came back or the socket opened). */
  flushSoon(): void {
    this.attempt = 0;
    this.schedule(0);
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(delayMs: number): void {
    if (this.timer || this.sending) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.flush();
    }, delayMs);
  }

  private async flush(): Promise<void> {
    if (this.sending || !this.events.length) return;
    if (globalThis.navigator?.onLine === false) return; // the `online` event flushes again
    this.sending = true;
    const batch = takeBatch(this.events);
    try {
      this.remove(await this.send(batch));
      this.attempt = 0;
    } catch {
      this.attempt++;
    } finally {
      this.sending = false;
    }
    if (this.events.length) this.schedule(this.attempt ? backoffDelay(this.attempt) : 0);
  }

  private save(): void {
    if (this.events.length) localStore.set(this.storageKey, JSON.stringify(this.events));
    else localStore.remove(this.storageKey);
  }
}

/** The first events that fit in one batch (always at least one). */
export function takeBatch(events: QueuedEvent[]): QueuedEvent[] {
  const batch: QueuedEvent[] = [];
  let bytes = 0;
  for (const event of events) {
    const size = JSON.stringify(event).length;
    if (batch.length && (batch.length >= BATCH_SIZE || bytes + size > BATCH_MAX_BYTES)) break;
    batch.push(event);
    bytes += size;
  }
  return batch;
}

import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { METADATA_CHANGE_KINDS, tellListeners, type MetadataChange, type MetadataChangeFeed, type MetadataChangeListener } from '../metadata-change-feed';
import type { PgDatabase } from './pg-database';

/** The one channel every node listens on (NOTIFY is per database: one cluster, one channel). */
export const METADATA_CHANGE_CHANNEL = 'svc_metadata_changes';
/**
 * How often a node checks that its LISTEN connection still hears: it notifies itself and
 * expects the notice back before the next check. Also how often unsent notices are retried.
 */
export const DEFAULT_LISTEN_CHECK_INTERVAL_MS = 2_000;
/** Notices kept for a retry while the database cannot be reached; beyond that, the caches' time bound holds. */
const MAX_UNSENT_NOTICES = 1_000;

export interface PgChangeFeedOptions {
  /** Default `DEFAULT_LISTEN_CHECK_INTERVAL_MS`. */
  listenCheckIntervalMs?: number;
}

/** What goes over the channel: a change, or a node's check of its own LISTEN (`beat`). */
interface Envelope {
  origin: string;
  change?: MetadataChange;
  beat?: number;
}

/**
 * Metadata change notices over PostgreSQL LISTEN/NOTIFY, one channel, JSON payloads. A notice
 * reaches the other nodes within milliseconds of `publish`, itself sent after the change was
 * committed (a NOTIFY outside a transaction is delivered at once).
 *
 * LISTEN holds one connection of its own (postgres.js opens it beside the pool). When that
 * connection breaks, notices sent meanwhile are lost. postgres.js listens again when it
 * reconnects at once, but gives up if the server is still down then; so the feed also checks
 * its LISTEN every `listenCheckIntervalMs` (a NOTIFY to itself that must come back) and listens
 * again until it succeeds. Every LISTEN after the first, whoever made it, tells the listeners
 * `missedChanges`.
 */
export class PgChangeFeed implements MetadataChangeFeed {
  /** This feed's id in the payloads, so that it knows its own notices. */
  private readonly origin = randomUUID();
  private readonly listeners = new Set<MetadataChangeListener>();
  /** Counts LISTEN registrations: callbacks of an older one are ignored (postgres.js may revive it). */
  private registration = 0;
  private listening: { unlisten(): Promise<void> } | null = null;
  private listenedBefore = false;
  /** A check is under way (one may outlast the interval while the server does not answer). */
  private checking = false;
  private beats = 0;
  /** When the check notice now awaited was sent (null: none awaited). */
  private beatSentAt: number | null = null;
  private unsent: MetadataChange[] = [];
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  private constructor(
    private readonly db: PgDatabase,
    private readonly checkIntervalMs: number,
  ) {}

  /** Listens on the channel; rejects (`storage_unavailable`) when the server cannot be reached. */
  static async start(db: PgDatabase, options: PgChangeFeedOptions = {}): Promise<PgChangeFeed> {
    const feed = new PgChangeFeed(db, options.listenCheckIntervalMs ?? DEFAULT_LISTEN_CHECK_INTERVAL_MS);
    await feed.listen();
    feed.timer = setInterval(() => void feed.check(), feed.checkIntervalMs);
    feed.timer.unref();
    return feed;
  }

  async publish(change: MetadataChange): Promise<void> {
    if (this.closed) return;
    if (this.unsent.length) {
      // Keep the order: this one goes after those still waiting.
      this.keepUnsent(change);
      await this.flushUnsent();
      return;
    }
    try {
      await this.notify({ origin: this.origin, change });
    } catch {
      this.keepUnsent(change);
    }
  }

  subscribe(listener: MetadataChangeListener): () => void {
    const entry: MetadataChangeListener = { changed: (c, own) => listener.changed(c, own), missedChanges: () => listener.missedChanges() };
    this.listeners.add(entry);
    return () => this.listeners.delete(entry);
  }

  /** Stops listening; the database itself is closed by its owner. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.listeners.clear();
    this.registration++;
    // Not awaited: with the server down, UNLISTEN would wait for a connection.
    void this.listening?.unlisten().catch(() => undefined);
    this.listening = null;
  }

  private async listen(): Promise<void> {
    const token = ++this.registration;
    // Synchronously forgets the old registration (postgres.js drops the channel's entry before
    // its UNLISTEN query), so the new LISTEN below is the only one.
    void this.listening?.unlisten().catch(() => undefined);
    this.listening = null;
    this.listening = await this.db.run((sql) =>
      sql.listen(
        METADATA_CHANGE_CHANNEL,
        (payload) => {
          if (token === this.registration) this.receive(payload);
        },
        () => {
          if (token === this.registration) this.listened();
        },
      ),
    );
  }

  /** A LISTEN took effect: the first at start, any later one after a break. */
  private listened(): void {
    this.beatSentAt = null;
    if (this.listenedBefore) tellListeners(this.listeners, (listener) => listener.missedChanges());
    this.listenedBefore = true;
  }

  private receive(payload: string): void {
    const envelope = parseEnvelope(payload);
    if (!envelope) return;
    const own = envelope.origin === this.origin;
    if (envelope.beat !== undefined) {
      if (own && envelope.beat === this.beats) this.beatSentAt = null;
      return;
    }
    const change = envelope.change;
    if (change) tellListeners(this.listeners, (listener) => listener.changed(change, own));
  }

  /** Retries unsent notices, then checks the LISTEN: listens again if the last check notice never came back. */
  private async check(): Promise<void> {
    if (this.closed || this.checking) return;
    this.checking = true;
    try {
      await this.flushUnsent();
      const now = performance.now();
      if (this.beatSentAt !== null && now - this.beatSentAt >= this.checkIntervalMs) {
        await this.listen();
        return;
      }
      if (this.beatSentAt !== null) return;
      this.beatSentAt = now;
      await this.notify({ origin: this.origin, beat: ++this.beats });
    } catch {
      // Unreachable: a check notice that was not sent never comes back, so the next check
      // listens again, and tries again while the server does not answer.
    } finally {
      this.checking = false;
    }
  }

  private async flushUnsent(): Promise<void> {
    while (this.unsent.length && !this.closed) {
      try {
        await this.notify({ origin: this.origin, change: this.unsent[0]! });
      } catch {
        return;
      }
      this.unsent.shift();
    }
  }

  private keepUnsent(change: MetadataChange): void {
    this.unsent.push(change);
    if (this.unsent.length > MAX_UNSENT_NOTICES) this.unsent.shift();
  }

  private async notify(envelope: Envelope): Promise<void> {
    await this.db.run((sql) => sql.notify(METADATA_CHANGE_CHANNEL, JSON.stringify(envelope)));
  }
}

/** The envelope of a payload, or null for one this version cannot read (a newer node's kind). */
function parseEnvelope(payload: string): Envelope | null {
  let value: unknown;
  try {
    value = JSON.parse(payload);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const { origin, change, beat } = value as Record<string, unknown>;
  if (typeof origin !== 'string') return null;
  if (typeof beat === 'number') return { origin, beat };
  if (typeof change !== 'object' || change === null) return null;
  const { kind, tenantSeq, id } = change as Record<string, unknown>;
  if (!(METADATA_CHANGE_KINDS as readonly unknown[]).includes(kind) || !Number.isInteger(tenantSeq)) return null;
  if (id !== undefined && typeof id !== 'string') return null;
  return { origin, change: { kind: kind as MetadataChange['kind'], tenantSeq: tenantSeq as number, ...(id === undefined ? {} : { id }) } };
}

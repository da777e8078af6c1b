import { jetstream, jetstreamManager, RetentionPolicy, StorageType, type JetStreamClient, type JetStreamManager, type PubAck, type StreamConfig } from '@nats-io/jetstream';
import { nanos, type NatsConnection } from '@nats-io/transport-node';
import type { EventLogChunk } from './event-log-chunks';
import { natsFailure } from './nats-failure';

export const EVENTS_STREAM = 'EVENTS';
/** Messages go to `svc.events.<tenantSeq>`. Nothing else may publish under this prefix: the stream would keep it. */
export const EVENTS_SUBJECT_PREFIX = 'svc.events';
/** How long the stream remembers a `Nats-Msg-Id` to drop a retried publish (JetStream's default). */
export const EVENTS_DUPLICATE_WINDOW_MS = 120_000;
/** How long a publish waits for its PubAck before it fails with `storage_unavailable`. */
export const EVENTS_PUBLISH_TIMEOUT_MS = 5_000;
/** How often `waitUntilPassed` looks at the stream. */
export const POSITION_POLL_INTERVAL_MS = 100;
/** Room left in a message for its subject, headers and protocol line. */
const MESSAGE_HEADROOM_BYTES = 4_096;
/** The server's `max_payload` when it does not say (NATS's default). */
const DEFAULT_MAX_PAYLOAD_BYTES = 1_048_576;

export interface EventLogOptions {
  /** Copies of each message: 1 in tests, 3 in production. Default 1. */
  replicas?: number;
  /** Default EVENTS_DUPLICATE_WINDOW_MS. */
  duplicateWindowMs?: number;
  /** Default EVENTS_PUBLISH_TIMEOUT_MS; also the timeout of the stream's API requests. */
  publishTimeoutMs?: number;
  /** Largest message body; default the server's `max_payload` less some headroom. Smaller in tests. */
  maxBodyBytes?: number;
}

/**
 * The stream EVENTS: every accepted batch, per tenant, until the writer has stored it.
 * Work-queue retention: a message leaves the stream when the writer acknowledges it, so no
 * user data stays in NATS longer than the writer's lag. File storage; replicas as configured.
 */
export class EventLog {
  private constructor(
    readonly connection: NatsConnection,
    private readonly jsm: JetStreamManager,
    private readonly js: JetStreamClient,
    private readonly publishTimeoutMs: number,
    readonly maxBodyBytes: number,
  ) {}

  /** Creates the stream, or brings its replicas and duplicate window to `options`; safe when several nodes start at once. */
  static async open(connection: NatsConnection, options: EventLogOptions = {}): Promise<EventLog> {
    const timeout = options.publishTimeoutMs ?? EVENTS_PUBLISH_TIMEOUT_MS;
    try {
      const jsm = await jetstreamManager(connection, { timeout });
      await ensureStream(jsm, {
        name: EVENTS_STREAM,
        subjects: [`${EVENTS_SUBJECT_PREFIX}.>`],
        retention: RetentionPolicy.Workqueue,
        storage: StorageType.File,
        num_replicas: options.replicas ?? 1,
        duplicate_window: nanos(options.duplicateWindowMs ?? EVENTS_DUPLICATE_WINDOW_MS),
      });
      const maxPayload = connection.info?.max_payload ?? DEFAULT_MAX_PAYLOAD_BYTES;
      const maxBodyBytes = Math.min(options.maxBodyBytes ?? Infinity, maxPayload - MESSAGE_HEADROOM_BYTES);
      return new EventLog(connection, jsm, jetstream(connection, { timeout }), timeout, maxBodyBytes);
    } catch (error) {
      throw natsFailure(error, 'open the event stream');
    }
  }

  /** Resolves with the PubAck once the stream has stored the chunk (`duplicate` when it had it already). */
  async publish(chunk: EventLogChunk): Promise<PubAck> {
    try {
      return await this.js.publish(`${EVENTS_SUBJECT_PREFIX}.${chunk.tenantSeq}`, chunk.body, { msgID: chunk.msgId, timeout: this.publishTimeoutMs });
    } catch (error) {
      throw natsFailure(error, 'store events');
    }
  }

  /** The stream's position now: the sequence of the last message it stored (0 when none ever was). */
  async position(): Promise<number> {
    return (await this.state()).last_seq;
  }

  /**
   * Whether the writer has passed `position`: every message up to it was stored in the sink
   * and acknowledged (acknowledged messages leave a work-queue stream).
   */
  async passed(position: number): Promise<boolean> {
    const state = await this.state();
    return state.messages === 0 || state.first_seq > position;
  }

  /**
   * Resolves once the writer has passed `position` (see `passed`): a deletion job reads the
   * position when it starts and waits here before deleting in the sink, so that no event of the
   * user still in the stream is written after the deletion. Rejects when `signal` aborts.
   */
  async waitUntilPassed(position: number, signal?: AbortSignal, pollIntervalMs = POSITION_POLL_INTERVAL_MS): Promise<void> {
    while (!(await this.passed(position))) {
      signal?.throwIfAborted();
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(done, pollIntervalMs);
        function done(): void {
          signal?.removeEventListener('abort', aborted);
          resolve();
        }
        function aborted(): void {
          clearTimeout(timer);
          reject(signal!.reason);
        }
        signal?.addEventListener('abort', aborted, { once: true });
      });
    }
  }

  /** The JetStream manager, for the writer's consumer. */
  manager(): JetStreamManager {
    return this.jsm;
  }

  private async state() {
    try {
      return (await this.jsm.streams.info(EVENTS_STREAM)).state;
    } catch (error) {
      throw natsFailure(error, 'read the event stream');
    }
  }
}

export async function ensureStream(jsm: JetStreamManager, config: Partial<StreamConfig> & { name: string }): Promise<void> {
  let current: StreamConfig;
  try {
    current = (await jsm.streams.info(config.name)).config;
  } catch (error) {
    if (!isNotFound(error)) throw error;
    try {
      await jsm.streams.add(config);
      return;
    } catch (addError) {
      // Another node created it meanwhile: compare with what it made.
      current = (await jsm.streams.info(config.name).catch(() => Promise.reject(addError))).config;
    }
  }
  // Replicas are raised, never lowered: a node started without SVC_NATS_REPLICAS must not turn a
  // production R3 stream into R1 (an operator lowers them on purpose with the NATS tools).
  const replicas = Math.max(current.num_replicas ?? 1, config.num_replicas ?? 1);
  if (current.num_replicas !== replicas || current.duplicate_window !== config.duplicate_window) {
    await jsm.streams.update(config.name, { ...current, num_replicas: replicas, duplicate_window: config.duplicate_window });
  }
}

function isNotFound(error: unknown): boolean {
  return (error as { name?: string } | null)?.name === 'StreamNotFoundError' || /not found/i.test(String((error as Error | null)?.message));
}


import type { JetStreamManager } from '@nats-io/jetstream';

/**
 * How long one reading of the consumers' lag is reused: scrapes of several Prometheus servers (or
 * a dashboard refreshing) within this time cost JetStream one request per consumer, and ingest none.
 */
export const CONSUMER_LAG_CACHE_MS = 2_000;

/** A durable consumer whose lag is read. */
export interface WatchedConsumer {
  stream: string;
  consumer: string;
}

/** What a consumer has not finished: messages not handed out yet, and handed out but not acknowledged. */
export interface ConsumerLag extends WatchedConsumer {
  /** Messages of the stream the consumer has not delivered yet (`num_pending`). */
  waiting: number;
  /** Messages delivered and not acknowledged yet (`num_ack_pending`): in a writer's batch, or a delivery in its retry delay. */
  unacknowledged: number;
}

export interface ConsumerLagOptions {
  /** Default CONSUMER_LAG_CACHE_MS. */
  cacheMs?: number;
  /** Milliseconds now; default `Date.now`. */
  now?: () => number;
}

/**
 * Reads the lag of the shared consumers (the writers' on EVENTS, the dispatchers' on WEBHOOKS)
 * from JetStream's consumer info, at most once per `cacheMs`; readers meanwhile share the last
 * reading or the one under way. A failed reading is not kept: the next scrape asks again.
 */
export class ConsumerLagReader {
  private last: { atMs: number; lag: Promise<ConsumerLag[]> } | null = null;

  constructor(
    private readonly jsm: Pick<JetStreamManager, 'consumers'>,
    private readonly consumers: WatchedConsumer[],
    private readonly options: ConsumerLagOptions = {},
  ) {}

  read(): Promise<ConsumerLag[]> {
    const nowMs = (this.options.now ?? Date.now)();
    if (this.last && nowMs - this.last.atMs < (this.options.cacheMs ?? CONSUMER_LAG_CACHE_MS)) return this.last.lag;
    const lag = Promise.all(this.consumers.map((watched) => this.readOne(watched)));
    const reading = { atMs: nowMs, lag };
    this.last = reading;
    lag.catch(() => {
      if (this.last === reading) this.last = null;
    });
    return lag;
  }

  private async readOne({ stream, consumer }: WatchedConsumer): Promise<ConsumerLag> {
    try {
      const info = await this.jsm.consumers.info(stream, consumer);
      return { stream, consumer, waiting: info.num_pending, unacknowledged: info.num_ack_pending };
    } catch (error) {
      throw new Error(`The lag of the consumer ${consumer} of ${stream} could not be read.`, { cause: error });
    }
  }
}

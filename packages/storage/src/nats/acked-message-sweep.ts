import type { JetStreamManager } from '@nats-io/jetstream';

/** How often the pipeline looks for acknowledged messages a stream still holds. */
export const ACKED_MESSAGE_SWEEP_INTERVAL_MS = 30_000;

/** A work-queue stream and the one durable consumer that works through it. */
export interface SweptQueue {
  stream: string;
  consumer: string;
}

export interface AckedMessageSweepOptions {
  /** Default ACKED_MESSAGE_SWEEP_INTERVAL_MS. */
  intervalMs?: number;
  /** A sweep that failed (NATS unreachable): the next one tries again. */
  onError: (error: unknown) => void;
}

/**
 * Removes from a work-queue stream the messages its consumer has acknowledged but the stream
 * still holds, and returns how many went. NATS 2.9 persists a consumer's acknowledgements and
 * the stream's deletes lazily, each on its own schedule: after nats-server is killed, the
 * consumer may come back with its ack floor past a message the stream kept. That message is
 * never delivered again, so it would stay forever, holding user data in NATS past the writer's
 * lag (and holding the stream's first sequence back, which `EventLog.passed` reads).
 *
 * Every message at or below the ack floor is acknowledged (the floor only rises over messages
 * acknowledged in order), so they can go. Only while the consumer is the stream's one consumer:
 * another one could still need them.
 */
export async function sweepAckedMessages(jsm: JetStreamManager, queue: SweptQueue): Promise<number> {
  const [stream, consumer] = await Promise.all([jsm.streams.info(queue.stream), jsm.consumers.info(queue.stream, queue.consumer)]);
  if (stream.state.consumer_count !== 1) return 0;
  const floor = consumer.ack_floor.stream_seq;
  if (stream.state.messages === 0 || stream.state.first_seq > floor) return 0;
  // Removes the messages below `seq`: those up to the floor.
  const { purged } = await jsm.streams.purge(queue.stream, { seq: floor + 1 });
  return purged;
}

/** `sweepAckedMessages` over some queues at start and then every `intervalMs`. */
export class AckedMessageSweep {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;

  constructor(
    private readonly jsm: JetStreamManager,
    private readonly queues: readonly SweptQueue[],
    private readonly options: AckedMessageSweepOptions,
  ) {}

  /** Sweeps now (in the background) and then every `intervalMs`; again after `stop` is fine. */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.sweep(), this.options.intervalMs ?? ACKED_MESSAGE_SWEEP_INTERVAL_MS);
    this.timer.unref();
    void this.sweep();
  }

  /** Stops sweeping and waits for a sweep under way. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  /** One sweep over every queue; a sweep still running is not started twice. */
  sweep(): Promise<void> {
    this.running ??= this.sweepAll().finally(() => (this.running = null));
    return this.running;
  }

  private async sweepAll(): Promise<void> {
    for (const queue of this.queues) {
      try {
        await sweepAckedMessages(this.jsm, queue);
      } catch (error) {
        this.options.onError(error);
      }
    }
  }
}

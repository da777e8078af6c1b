import { randomUUID } from 'node:crypto';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';

/** How often a node sends its ping through NATS. */
export const BUS_PING_INTERVAL_MS = 5_000;
/** A ping not back within this time is counted as lost (NATS away or the connection stalled). */
export const BUS_PING_TIMEOUT_MS = 30_000;
/** Core-NATS subjects of the pings: `svc.ping.<node's random id>` (not under `svc.bus.`, whose topics carry payloads). */
export const BUS_PING_SUBJECT_PREFIX = 'svc.ping.';

export interface BusRoundTripOptions {
  /** Each ping that came back, with its round trip in ms. */
  onRoundTrip: (ms: number) => void;
  /** Each ping not back within `timeoutMs` (noticed at the next ping, or when it comes back late). */
  onLost?: () => void;
  /** Default BUS_PING_INTERVAL_MS. */
  intervalMs?: number;
  /** Default BUS_PING_TIMEOUT_MS. */
  timeoutMs?: number;
  /** Milliseconds now (monotonic); default `performance.now`. */
  now?: () => number;
}

/**
 * Measures the bus's round trip: every `intervalMs` the node publishes a ping on the connection its
 * bus uses and times it until the server hands it back to the node's own subscription. It travels
 * as the bus's messages do (behind them in the client's buffer, through the server's routing), so
 * a slow bus shows here before the nodes' views drift apart. The first ping goes at `start`.
 */
export class BusRoundTrip {
  private readonly subject = `${BUS_PING_SUBJECT_PREFIX}${randomUUID()}`;
  /** Pings under way: their number and when they were sent. */
  private readonly sent = new Map<number, number>();
  private sequence = 0;
  private subscription: Subscription | null = null;
  private timer: ReturnType<typeof setInterval> | null = null;

  constructor(
    private readonly connection: NatsConnection,
    private readonly options: BusRoundTripOptions,
  ) {}

  start(): void {
    if (this.timer) return;
    this.subscription = this.connection.subscribe(this.subject, {
      callback: (error, message) => {
        if (!error) this.received(Number(message.string()));
      },
    });
    this.timer = setInterval(() => this.ping(), this.options.intervalMs ?? BUS_PING_INTERVAL_MS);
    this.timer.unref();
    this.ping();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.subscription?.unsubscribe();
    this.subscription = null;
    this.sent.clear();
  }

  private ping(): void {
    this.forgetLost();
    if (this.connection.isClosed()) return;
    const sequence = ++this.sequence;
    this.sent.set(sequence, this.now());
    try {
      this.connection.publish(this.subject, String(sequence));
    } catch {
      // The connection is closing: the ping is counted as lost when it times out.
    }
  }

  private received(sequence: number): void {
    const sentAt = this.sent.get(sequence);
    if (sentAt === undefined) return;
    this.sent.delete(sequence);
    const ms = this.now() - sentAt;
    // Back too late is lost too: the histogram keeps the trips the bus still works with.
    if (ms > (this.options.timeoutMs ?? BUS_PING_TIMEOUT_MS)) this.options.onLost?.();
    else this.options.onRoundTrip(ms);
  }

  private forgetLost(): void {
    const oldest = this.now() - (this.options.timeoutMs ?? BUS_PING_TIMEOUT_MS);
    for (const [sequence, sentAt] of this.sent) {
      if (sentAt > oldest) break;
      this.sent.delete(sequence);
      this.options.onLost?.();
    }
  }

  private now(): number {
    return this.options.now ? this.options.now() : performance.now();
  }
}

/** The longest check period, ms (the server's default heartbeat): also the period before a welcome says otherwise. */
export const LIVENESS_PERIOD_MAX_MS = 15_000;

/** What a check asks of the connection. */
export type LivenessAction = 'none' | 'ping' | 'reconnect';

/** The check period for a server that pings every `heartbeatIntervalMs`: that, at most 15 s. */
export function livenessPeriodMs(heartbeatIntervalMs: unknown): number {
  return typeof heartbeatIntervalMs === 'number' && heartbeatIntervalMs > 0 ? Math.min(heartbeatIntervalMs, LIVENESS_PERIOD_MAX_MS) : LIVENESS_PERIOD_MAX_MS;
}

/**
 * Tells from the silence of a socket whether its server still lives. A node that hangs or is
 * cut off leaves its viewers' sockets open and silent (a load balancer keeps an idle tunnel up
 * for an hour), so only silence tells. Checked every period P: after P of silence the client
 * pings once; after 2P of silence with that ping unanswered at a later check, the socket is
 * dead, found within 3P of its last frame. A loaded server has 2P of total silence to answer,
 * not one pong's time; and needing a ping sent at an earlier check spares a hidden tab whose
 * checks the browser throttles to one a minute: its first late check pings, it does not judge.
 * A socket still connecting cannot ping: 2P without its handshake's answer is dead.
 */
export class LivenessWatch {
  private lastReceivedAtMs: number;
  private pinged = false;

  constructor(
    readonly periodMs: number,
    private readonly now: () => number,
  ) {
    this.lastReceivedAtMs = now();
  }

  /** Anything arrived (a frame, the handshake's answer). */
  received(): void {
    this.lastReceivedAtMs = this.now();
    this.pinged = false;
  }

  /** The check run every period; `canPing` is false while the socket is still connecting. */
  check(canPing: boolean): LivenessAction {
    const silentMs = this.now() - this.lastReceivedAtMs;
    if (silentMs < this.periodMs) return 'none';
    const silentTooLong = silentMs >= 2 * this.periodMs;
    if (!canPing) return silentTooLong ? 'reconnect' : 'none';
    if (!this.pinged) {
      this.pinged = true;
      return 'ping';
    }
    return silentTooLong ? 'reconnect' : 'none';
  }
}

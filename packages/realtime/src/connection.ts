import type { WebSocket } from 'ws';
import { CLOSE_CODES } from '@svc/protocol';
import type { Tenant } from '@svc/storage';
import type { MessageBudget } from './message-budget';
import { frame, type Room } from './room';

/** Where one client stands: who it is, which broadcast it watches. */
export interface Session {
  key: string;
  id: string;
  tenant: Tenant;
  userId: string | null;
  /** Who counts as one viewer: the userId when known, else the session. */
  viewer: string;
  country: string | null;
  room: Room;
  joinedAt: number;
  /** When the last connection ended; watching time stops there, not when the grace runs out. */
  disconnectedAt: number | null;
  connection: Connection | null;
  graceTimer: unknown;
  /** The client sent its own broadcast.left. */
  leftByClient: boolean;
}

export interface SendLimits {
  /** Above this many queued bytes, droppable updates are skipped. */
  softBufferBytes: number;
  /** Above this many queued bytes, the client is too slow and is closed. */
  hardBufferBytes: number;
}

/** One WebSocket: its send queue discipline, message budget and liveness. */
export class Connection {
  /** Whether the client showed a sign of life (a message or a pong) since the last heartbeat. */
  alive = true;
  /** Closed because it answered no heartbeat: its session ends with reason `timeout`. */
  heartbeatTimedOut = false;
  closedByServer = false;

  constructor(
    readonly ws: WebSocket,
    readonly session: Session,
    /** The API key it was opened with: revoking the key closes it. */
    readonly apiKey: string,
    private readonly limits: SendLimits,
    /** How many messages the client may still send. */
    readonly budget: MessageBudget,
  ) {}

  send(data: Buffer, droppable = false): void {
    if (this.ws.readyState !== this.ws.OPEN) return;
    const queued = this.ws.bufferedAmount;
    if (queued > this.limits.hardBufferBytes) {
      this.close(CLOSE_CODES.policyViolation, 'slow_consumer');
      return;
    }
    if (droppable && queued > this.limits.softBufferBytes) return;
    this.ws.send(data, { binary: false });
  }

  /**
   * Takes one client message from the budget: true when it may be handled. Over the rate, the
   * message is dropped (the client told so now and then with `rate_limited`); a client that keeps
   * on is closed with 4429, after `closingForRate` is called.
   */
  admitMessage(nowMs: number, closingForRate: () => void): boolean {
    this.alive = true;
    const verdict = this.budget.take(nowMs);
    if (verdict === 'pass') return true;
    if (verdict === 'close') {
      if (this.ws.readyState === this.ws.OPEN) closingForRate();
      this.close(CLOSE_CODES.policyViolation, 'rate_limited');
    } else if (verdict === 'notify') {
      this.send(frame({ type: 'error', code: 'rate_limited', detail: `At most ${this.budget.messagesPerSecond} messages per second; messages are being dropped.` }));
    }
    return false;
  }

  /** One heartbeat: a client silent since the last one is cut off (timed out), else pinged. */
  heartbeat(): void {
    if (!this.alive) {
      this.heartbeatTimedOut = true;
      this.ws.terminate();
      return;
    }
    this.alive = false;
    if (this.ws.readyState === this.ws.OPEN) this.ws.ping();
  }

  close(code: number, reason: string): void {
    this.closedByServer = true;
    if (this.ws.readyState === this.ws.OPEN || this.ws.readyState === this.ws.CONNECTING) this.ws.close(code, reason);
  }
}

import type { WebSocket } from 'ws';
import { CLOSE_CODES } from '@svc/protocol';
import type { Tenant } from '@svc/storage';
import type { MessageBudget } from './message-budget';
import type { Room } from './room';

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
  alive = true;
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

  close(code: number, reason: string): void {
    this.closedByServer = true;
    if (this.ws.readyState === this.ws.OPEN || this.ws.readyState === this.ws.CONNECTING) this.ws.close(code, reason);
  }
}

import type { ServerMessage } from '@svc/protocol';
import { SvcError } from './errors';

/** The subprotocol this SDK speaks (docs/realtime-protocol.md). */
const SUBPROTOCOL = 'svc.v1';
/** Reconnection as socket.io does it: 1 s first, at most 5 s, randomized by half. */
const RECONNECT_MIN_MS = 1_000;
const RECONNECT_MAX_MS = 5_000;
const RECONNECT_RANDOMIZATION = 0.5;
/** Close codes after which reconnecting cannot help. */
const FINAL_CLOSE_CODES = new Set([4400, 4401, 4403, 4406, 4409]);

export type WelcomeMessage = Extract<ServerMessage, { type: 'welcome' }>;

export interface ConnectionHandlers {
  welcome(message: WelcomeMessage): void;
  message(message: ServerMessage): void;
  /** The connection is closed for good (final close code or `close()`). */
  ended(error: SvcError | null): void;
  open(): void;
  lost(): void;
}

/**
 * One broadcast's WebSocket: opens, reconnects with backoff (the server resumes the same
 * session), and stops for good on a final close code.
 */
export class RealtimeConnection {
  private ws: WebSocket | null = null;
  private attempts = 0;
  private closedByUs = false;
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    private url: string,
    private readonly handlers: ConnectionHandlers,
  ) {}

  /** Reconnects to a new address (e.g. with a userId); the server resumes the session. */
  reconnect(url: string): void {
    this.url = url;
    const ws = this.ws;
    this.ws = null;
    ws?.close(1000, 'reconnect');
    this.connect();
  }

  open(): void {
    this.closedByUs = false;
    this.connect();
  }

  get isOpen(): boolean {
    return this.ws?.readyState === 1;
  }

  send(message: object): boolean {
    if (!this.isOpen) return false;
    this.ws!.send(JSON.stringify(message));
    return true;
  }

  close(): void {
    this.closedByUs = true;
    if (this.timer) clearTimeout(this.timer);
    this.ws?.close(1000, 'bye');
    this.ws = null;
  }

  private connect(): void {
    const ws = new WebSocket(this.url, SUBPROTOCOL);
    this.ws = ws;
    ws.onmessage = (event) => {
      let message: ServerMessage;
      try {
        message = JSON.parse(String(event.data)) as ServerMessage;
      } catch {
        return;
      }
      if (message.type === 'welcome') {
        this.attempts = 0;
        this.handlers.welcome(message);
      } else this.handlers.message(message);
    };
    ws.onopen = () => this.handlers.open();
    ws.onclose = (event) => {
      if (this.ws !== ws) return;
      this.ws = null;
      if (this.closedByUs) return;
      if (FINAL_CLOSE_CODES.has(event.code)) {
        this.handlers.ended(closeError(event.code, event.reason));
        return;
      }
      this.handlers.lost();
      const base = Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS * 2 ** this.attempts++);
      const delay = base * (1 - RECONNECT_RANDOMIZATION + Math.random() * RECONNECT_RANDOMIZATION * 2);
      this.timer = setTimeout(() => this.connect(), Math.min(RECONNECT_MAX_MS, delay));
    };
  }
}

function closeError(code: number, reason: string): SvcError {
  switch (code) {
    case 4401:
      return new SvcError('invalid_api_key', 'The API key is unknown or revoked: check the key passed to SvcSDK.configure().');
    case 4403:
      return new SvcError('origin_not_allowed', "This page's origin is not among the allowed origins in the dashboard settings.");
    case 4409:
      return new SvcError('replaced', 'Another connection of this session took over.');
    default:
      return new SvcError(reason || 'connection_failed', `The realtime connection was refused (${code} ${reason}).`);
  }
}

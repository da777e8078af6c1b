import type { ServerMessage } from '@svc/protocol';
import { SvcError } from './errors';
import { LivenessWatch, LIVENESS_PERIOD_MAX_MS, livenessPeriodMs } from './liveness-watch';

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

export interface ConnectionOptions {
  /** The clock of the liveness checks (default `Date.now`). */
  now?: () => number;
  /** The WebSocket class (default the browser's). */
  WebSocket?: typeof WebSocket;
}

/**
 * One broadcast's WebSocket: opens, reconnects with backoff (the server resumes the same
 * session), and stops for good on a final close code. A socket that falls silent (its node
 * hung or cut off, see LivenessWatch) is left at once for a new one, which resumes the session.
 */
export class RealtimeConnection {
  private ws: WebSocket | null = null;
  private attempts = 0;
  private closedByUs = false;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private watchTimer: ReturnType<typeof setInterval> | null = null;

  constructor(
    private url: string,
    private readonly handlers: ConnectionHandlers,
    private readonly options: ConnectionOptions = {},
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
    this.stopWatching();
    this.ws?.close(1000, 'bye');
    this.ws = null;
  }

  private connect(): void {
    const ws = new (this.options.WebSocket ?? WebSocket)(this.url, SUBPROTOCOL);
    this.ws = ws;
    let watch = this.watch(ws, LIVENESS_PERIOD_MAX_MS);
    ws.onmessage = (event) => {
      if (this.ws !== ws) return;
      watch.received();
      let message: ServerMessage;
      try {
        message = JSON.parse(String(event.data)) as ServerMessage;
      } catch {
        return;
      }
      if (message.type === 'welcome') {
        this.attempts = 0;
        watch = this.watch(ws, livenessPeriodMs(message.heartbeatIntervalMs));
        this.handlers.welcome(message);
      } else this.handlers.message(message);
    };
    ws.onopen = () => {
      if (this.ws !== ws) return;
      watch.received();
      this.handlers.open();
    };
    ws.onclose = (event) => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.stopWatching();
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

  /** Checks `ws` every period from now on (one watch at a time: it replaces the one before). */
  private watch(ws: WebSocket, periodMs: number): LivenessWatch {
    this.stopWatching();
    const watch = new LivenessWatch(periodMs, this.options.now ?? Date.now);
    this.watchTimer = setInterval(() => {
      const action = watch.check(ws.readyState === 1);
      if (action === 'ping') ws.send('{"type":"ping"}');
      else if (action === 'reconnect') this.leaveSilent(ws);
    }, periodMs);
    return watch;
  }

  private stopWatching(): void {
    if (this.watchTimer) clearInterval(this.watchTimer);
    this.watchTimer = null;
  }

  /** Detaches a silent socket (its close, however late, is ignored) and connects again at once. */
  private leaveSilent(ws: WebSocket): void {
    this.stopWatching();
    this.ws = null;
    ws.close(1000, 'silent');
    this.handlers.lost();
    this.connect();
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

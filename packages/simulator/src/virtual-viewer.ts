import WebSocket from 'ws';
import { uuidv7 } from 'uuidv7';
import { isClosed, type ClientMessage, type Overlay, type ServerMessage } from '@svc/protocol';

/** Reconnection as the SDK does it: 1 s first, at most 5 s, randomized by half. */
const RECONNECT_MIN_MS = 1_000;
const RECONNECT_MAX_MS = 5_000;
/** Close codes after which reconnecting cannot help (as in the SDK). */
const FINAL_CLOSE_CODES = new Set([4400, 4401, 4403, 4406, 4409]);
/** Answers after which the same message is sent again later (as in the SDK). */
const TRANSIENT_CODES = new Set(['internal_error', 'not_ready', 'rate_limited', 'timeout', 'disconnected', 'database_locked', 'storage_unavailable']);
/** Pause before a message refused with a transient code is sent again. */
const RETRY_DELAY_MS = 1_000;
/** How long the upgrade, then the `welcome`, may take before the socket is given up. */
const HANDSHAKE_TIMEOUT_MS = 10_000;
const WELCOME_TIMEOUT_MS = 10_000;
/** Sockets tried before a viewer's first join counts as failed. */
const FIRST_JOIN_ATTEMPTS = 3;
/** Longest liveness period: a ping after this much silence, a new socket after twice it. */
const LIVENESS_MAX_PERIOD_MS = 15_000;
/** How long a leaving viewer waits for the answers to what it sent. */
const LEAVE_WAIT_MS = 10_000;

export interface ViewerOptions {
  /** ws(s)://host of the service. */
  webSocketBaseURL: string;
  apiKey: string;
  broadcastId: string;
  userId: string | null;
  /** Chance (0–1) that the viewer acts on an overlay it sees. */
  activity: number;
  random: () => number;
}

export interface ViewerStats {
  /** Events sent in `track` messages. */
  events: number;
  /** Of those, events the server acknowledged (stored, or stored already). */
  acknowledged: number;
  /** Of those, events the server refused for good (rejected in the `ack`, or a final error). */
  refused: number;
  votes: number;
  orders: number;
  /** `error` frames and events rejected. */
  errors: number;
  /** Times the socket was lost (closed, or silent too long) and opened again. */
  reconnects: number;
  /** Reconnects whose `welcome` resumed the same session. */
  resumed: number;
  /** Messages sent again on a new socket, or after a transient refusal. */
  resent: number;
}

type Sent = Extract<ClientMessage, { type: 'track' | 'poll.vote' | 'contest.enter' }>;

/** A message waiting for its answer. */
interface Unanswered {
  message: Sent;
  /** Sent at least once already: sending it again counts as resent. */
  sent: boolean;
}

/**
 * One simulated viewer: joins over the WebSocket, reacts to what it is shown (votes, enters,
 * taps, views and buys products) with some probability while it is on screen and open (once per
 * poll and contest, as the SDK shows them answered), and leaves when told. Like the SDK, it
 * reconnects when its socket is lost or falls silent (the server resumes the session, on another
 * node in a cluster) and sends again what was not answered yet, and what was refused for a
 * passing reason: events keep their ids, so the server stores each once, and a vote already
 * counted is refused, not counted twice. Messages go out only on a socket that got its `welcome`.
 */
export class VirtualViewer {
  readonly sessionId = `svc_sim${uuidv7().replace(/-/g, '')}`;
  readonly stats: ViewerStats = { events: 0, acknowledged: 0, refused: 0, votes: 0, orders: 0, errors: 0, reconnects: 0, resumed: 0, resent: 0 };
  /** Error codes seen (error frames and rejected events), with how often. */
  readonly errorCodes = new Map<string, number>();
  /** Ids of the events the server acknowledged. */
  readonly acknowledgedIds: string[] = [];
  private readonly unanswered = new Map<string, Unanswered>();
  /** The overlays on screen now, by id: a reaction waiting for one hidden or closed meanwhile is dropped. */
  private readonly onScreen = new Map<string, Overlay>();
  /** Polls voted in and contests entered: a poll or contest shown again is not answered twice (the SDK shows it as done). */
  private readonly answeredOverlays = new Set<string>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private ws: WebSocket | null = null;
  /** The current socket got its `welcome`: messages may go out. */
  private ready = false;
  private welcomed = false;
  /** `leave()` began: no more reactions. */
  private leaving = false;
  /** Done for good: no more sockets. */
  private closed = false;
  private attempts = 0;
  private joinedAt = 0;
  private lastHeardAt = 0;
  private liveness: NodeJS.Timeout | null = null;
  private joined: { resolve: () => void; reject: (error: Error) => void } | null = null;
  private answered: (() => void) | null = null;

  constructor(private readonly options: ViewerOptions) {}

  /** Resolves at the first `welcome`; rejects when no socket got one after a few tries. */
  join(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.joined = { resolve, reject };
      this.connect();
    });
  }

  /** Events sent that the server has not answered (still waiting, or never will be). */
  get unacknowledged(): number {
    let count = 0;
    for (const { message } of this.unanswered.values()) if (message.type === 'track') count += message.events.length;
    return count;
  }

  /** Stops reacting, sends `broadcast.left`, waits (bounded) for the answers to everything sent, then closes. */
  async leave(): Promise<void> {
    if (this.leaving) return;
    this.leaving = true;
    if (this.welcomed && !this.closed) {
      this.track('broadcast.left', { reason: 'closed', watchedMs: Date.now() - this.joinedAt });
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, LEAVE_WAIT_MS);
        this.answered = () => {
          clearTimeout(timer);
          resolve();
        };
        this.settled();
      });
    }
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.stopLiveness();
    const ws = this.ws;
    this.ws = null;
    ws?.close(1000);
  }

  private later(delayMs: number, fn: () => void): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      fn();
    }, delayMs);
    this.timers.add(timer);
  }

  private connect(): void {
    const { webSocketBaseURL, apiKey, broadcastId, userId } = this.options;
    const params = new URLSearchParams({ apiKey, sessionId: this.sessionId, contentId: broadcastId, ...(userId ? { userId } : {}) });
    const ws = new WebSocket(`${webSocketBaseURL}/v1/ws?${params}`, 'svc.v1', { handshakeTimeout: HANDSHAKE_TIMEOUT_MS });
    this.ws = ws;
    this.ready = false;
    this.later(HANDSHAKE_TIMEOUT_MS + WELCOME_TIMEOUT_MS, () => {
      if (this.ws === ws && !this.ready) this.drop(ws);
    });
    ws.on('message', (data) => {
      if (this.ws !== ws) return;
      this.lastHeardAt = Date.now();
      this.onMessage(JSON.parse(String(data)) as ServerMessage);
    });
    ws.on('error', () => {});
    ws.on('close', (code) => {
      if (this.ws === ws) this.lost(code);
    });
  }

  /** Gives socket `ws` up (silent, or no welcome): whatever it does later is ignored. */
  private drop(ws: WebSocket): void {
    this.ws = null;
    ws.terminate();
    this.lost(1006);
  }

  private lost(code: number): void {
    this.ws = null;
    this.ready = false;
    this.stopLiveness();
    if (this.closed) return;
    const final = FINAL_CLOSE_CODES.has(code);
    if (final || (!this.welcomed && this.attempts + 1 >= FIRST_JOIN_ATTEMPTS)) {
      this.closed = true;
      if (!this.welcomed) this.joined?.reject(new Error(`closed ${code}`));
      this.answered?.();
      return;
    }
    const delay = Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS * 2 ** this.attempts++) * (0.5 + this.options.random());
    this.later(Math.min(RECONNECT_MAX_MS, delay), () => {
      if (this.closed) return;
      if (this.welcomed) this.stats.reconnects++;
      this.connect();
    });
  }

  /** Pings after `period` of silence, gives the socket up after twice that (a hung or cut-off node). */
  private startLiveness(heartbeatIntervalMs: number): void {
    this.stopLiveness();
    const period = Math.min(heartbeatIntervalMs > 0 ? heartbeatIntervalMs : LIVENESS_MAX_PERIOD_MS, LIVENESS_MAX_PERIOD_MS);
    const ws = this.ws;
    this.liveness = setInterval(() => {
      if (!ws || this.ws !== ws) return;
      const silentMs = Date.now() - this.lastHeardAt;
      if (silentMs > 2 * period) this.drop(ws);
      else if (silentMs >= period) ws.send(JSON.stringify({ type: 'ping' }));
    }, period);
  }

  private stopLiveness(): void {
    if (this.liveness) clearInterval(this.liveness);
    this.liveness = null;
  }

  private onMessage(message: ServerMessage): void {
    switch (message.type) {
      case 'welcome': {
        const first = !this.welcomed;
        this.welcomed = true;
        this.attempts = 0;
        if (!first && message.session.resumed) this.stats.resumed++;
        // A reconnect after the grace period is a new session for the server, which wrote the
        // broadcast.left of the one before: it gets its own joined (as in the SDK).
        if (first || !message.session.resumed) {
          this.joinedAt = Date.now();
          this.track('broadcast.joined', {});
        }
        this.ready = true;
        // What is on screen now (overlays hidden while the socket was lost are gone).
        this.onScreen.clear();
        for (const overlay of message.overlays) this.onScreen.set(overlay.id, overlay);
        for (const [requestId, waiting] of this.unanswered) this.transmit(requestId, waiting);
        this.startLiveness(message.heartbeatIntervalMs);
        if (first) {
          for (const overlay of message.overlays) this.react(overlay);
          this.joined?.resolve();
        }
        break;
      }
      case 'overlay.show':
        this.react(message.overlay);
        break;
      case 'overlay.update':
        if (this.onScreen.has(message.overlay.id)) this.onScreen.set(message.overlay.id, message.overlay);
        break;
      case 'overlay.hide':
        this.onScreen.delete(message.overlayId);
        break;
      case 'ack': {
        const waiting = message.requestId ? this.unanswered.get(message.requestId) : undefined;
        if (!waiting) break;
        this.unanswered.delete(message.requestId!);
        if (waiting.message.type === 'track') {
          const refused = new Set((message.rejected ?? []).map((r) => r.index));
          for (const r of message.rejected ?? []) this.countError(r.code);
          this.stats.refused += refused.size;
          waiting.message.events.forEach((event, index) => {
            if (refused.has(index)) return;
            this.stats.acknowledged++;
            this.acknowledgedIds.push((event as { eventId: string }).eventId);
          });
        }
        this.settled();
        break;
      }
      case 'error': {
        this.countError(message.code);
        const waiting = message.requestId ? this.unanswered.get(message.requestId) : undefined;
        if (!waiting) break;
        if (TRANSIENT_CODES.has(message.code)) {
          // Sent again after a pause, on whichever socket is ready then (a welcome sends it sooner).
          const requestId = message.requestId!;
          this.later(RETRY_DELAY_MS, () => {
            if (this.ready && this.unanswered.get(requestId) === waiting) this.transmit(requestId, waiting);
          });
          break;
        }
        this.unanswered.delete(message.requestId!);
        if (waiting.message.type === 'track') this.stats.refused += waiting.message.events.length;
        this.settled();
        break;
      }
    }
  }

  private countError(code: string): void {
    this.stats.errors++;
    this.errorCodes.set(code, (this.errorCodes.get(code) ?? 0) + 1);
  }

  private settled(): void {
    if (this.unanswered.size === 0 || this.closed) this.answered?.();
  }

  /** Keeps `message` until answered; sends it now if the socket is ready, else at the next welcome. */
  private queue(message: Sent): void {
    const requestId = uuidv7().slice(-12);
    const waiting = { message, sent: false };
    this.unanswered.set(requestId, waiting);
    if (this.ready) this.transmit(requestId, waiting);
  }

  private transmit(requestId: string, waiting: Unanswered): void {
    if (waiting.sent) this.stats.resent++;
    waiting.sent = true;
    this.ws!.send(JSON.stringify({ ...waiting.message, requestId }));
  }

  private track(event: string, data: Record<string, unknown>, commerce: Record<string, unknown> = {}): void {
    this.stats.events++;
    this.queue({ type: 'track', sentAt: new Date().toISOString(), events: [{ event, eventId: uuidv7(), timestamp: new Date().toISOString(), data, ...commerce }] });
  }

  private chance(): boolean {
    return this.options.random() < this.options.activity;
  }

  private react(overlay: Overlay): void {
    if (this.leaving) return;
    this.onScreen.set(overlay.id, overlay);
    /**
     * A reaction a moment later, dropped once the viewer leaves, or once the overlay is hidden or
     * closed (a viewer cannot tap a card gone from the screen, nor vote in a closed poll).
     */
    const later = (fn: () => void) =>
      this.later(200 + this.options.random() * 2_000, () => {
        const now = this.onScreen.get(overlay.id);
        if (!this.leaving && now && !isClosed('closesAt' in now ? now.closesAt : undefined, Date.now())) fn();
      });
    /** A vote or entry, at most once per overlay (the SDK shows it answered when it comes back). */
    const answerOnce = (send: () => void) => {
      if (this.answeredOverlays.has(overlay.id) || !this.chance()) return;
      later(() => {
        if (this.answeredOverlays.has(overlay.id)) return;
        this.answeredOverlays.add(overlay.id);
        send();
      });
    };
    switch (overlay.type) {
      case 'poll':
        this.track('poll.viewed', { pollId: overlay.id, questionText: overlay.question });
        answerOnce(() => {
          this.stats.votes++;
          this.queue({ type: 'poll.vote', pollId: overlay.id, optionIndex: Math.floor(this.options.random() * overlay.options.length) });
        });
        break;
      case 'contest':
        this.track('contest.viewed', { contestId: overlay.id, title: overlay.title });
        answerOnce(() => this.queue({ type: 'contest.enter', contestId: overlay.id }));
        break;
      case 'lineup':
        this.track('lineup.viewed', { lineupId: overlay.id });
        break;
      case 'sponsor_moment':
        this.track('sponsor_moment.viewed', { momentId: overlay.id, sponsorId: overlay.sponsorId });
        if (this.chance()) later(() => this.track('sponsor_moment.tapped', { momentId: overlay.id, sponsorId: overlay.sponsorId }));
        break;
      case 'product': {
        const productId = overlay.productId ?? overlay.id;
        const sponsorId = overlay.sponsorId ?? null;
        const line = { productId, name: overlay.name, quantity: 1, unitPrice: overlay.price, currency: overlay.currency };
        const cart = { sponsorId, orderId: null, items: [line], total: overlay.price };
        this.track('product.viewed', { productId, placement: overlay.placement }, { sponsorId, orderId: null, items: [], total: 0 });
        if (!this.chance()) break;
        later(() => {
          this.track('product.tapped', { productId }, { sponsorId, orderId: null, items: [], total: 0 });
          this.track('cart.item_added', { productId, quantity: 1 }, cart);
          if (!this.chance()) return;
          this.track('checkout.started', {}, cart);
          if (this.options.random() < 0.7) {
            this.stats.orders++;
            this.track('checkout.completed', { currency: overlay.currency }, { ...cart, orderId: `ord_${uuidv7()}` });
          } else this.track('checkout.abandoned', { step: 'payment' }, cart);
        });
        break;
      }
    }
  }
}

import WebSocket from 'ws';
import { uuidv7 } from 'uuidv7';
import type { ClientMessage, Overlay, ServerMessage } from '@svc/protocol';

/** Reconnection as the SDK does it: 1 s first, at most 5 s, randomized by half. */
const RECONNECT_MIN_MS = 1_000;
const RECONNECT_MAX_MS = 5_000;
/** Close codes after which reconnecting cannot help (as in the SDK). */
const FINAL_CLOSE_CODES = new Set([4400, 4401, 4403, 4406, 4409]);
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
  votes: number;
  orders: number;
  /** `error` frames, events the server rejected, joins that failed. */
  errors: number;
  /** Times the socket was lost and opened again. */
  reconnects: number;
  /** Reconnects whose `welcome` resumed the same session. */
  resumed: number;
}

type Sent = Extract<ClientMessage, { type: 'track' | 'poll.vote' | 'contest.enter' }>;

/**
 * One simulated viewer: joins over the WebSocket, reacts to what it is shown (votes, enters,
 * taps, views and buys products) with some probability, and leaves when told. Like the SDK, it
 * reconnects when its socket is lost (the server resumes the session, on another node in a
 * cluster) and sends again what was not answered yet: events keep their ids, so the server
 * stores each once, and a vote already counted is refused, not counted twice.
 */
export class VirtualViewer {
  readonly sessionId = `svc_sim${uuidv7().replace(/-/g, '')}`;
  readonly stats: ViewerStats = { events: 0, acknowledged: 0, votes: 0, orders: 0, errors: 0, reconnects: 0, resumed: 0 };
  /** Error codes seen, with how often. */
  readonly errorCodes = new Map<string, number>();
  /** Ids of the events the server acknowledged. */
  readonly acknowledgedIds: string[] = [];
  /** Messages sent and not answered yet, by request id: sent again after a reconnect. */
  private readonly unanswered = new Map<string, Sent>();
  private ws: WebSocket | null = null;
  private joinedAt = 0;
  private welcomed = false;
  private leaving = false;
  private attempts = 0;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private answered: (() => void) | null = null;

  constructor(private readonly options: ViewerOptions) {}

  /** Resolves at the first `welcome`; rejects when the first socket closes before it. */
  join(): Promise<void> {
    return new Promise((resolve, reject) => this.connect(resolve, reject));
  }

  /** Events sent that the server has not acknowledged (still waiting, or never will be). */
  get unacknowledged(): number {
    let count = 0;
    for (const message of this.unanswered.values()) if (message.type === 'track') count += message.events.length;
    return count;
  }

  /** Sends `broadcast.left`, waits (bounded) for the answers to everything sent, then closes. */
  async leave(): Promise<void> {
    if (!this.ws && !this.reconnectTimer) return;
    this.track('broadcast.left', { reason: 'closed', watchedMs: Date.now() - this.joinedAt });
    if (this.unanswered.size > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, LEAVE_WAIT_MS);
        this.answered = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    this.leaving = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = null;
    const ws = this.ws;
    this.ws = null;
    ws?.close(1000);
  }

  private connect(resolve?: () => void, reject?: (error: Error) => void): void {
    const { webSocketBaseURL, apiKey, broadcastId, userId } = this.options;
    const params = new URLSearchParams({ apiKey, sessionId: this.sessionId, contentId: broadcastId, ...(userId ? { userId } : {}) });
    const ws = new WebSocket(`${webSocketBaseURL}/v1/ws?${params}`, 'svc.v1');
    this.ws = ws;
    ws.on('message', (data) => this.onMessage(JSON.parse(String(data)) as ServerMessage, resolve));
    ws.on('error', () => {});
    ws.on('close', (code, reason) => {
      if (this.ws !== ws) return;
      this.ws = null;
      if (!this.welcomed) {
        reject?.(new Error(`closed ${code} ${String(reason)}`));
        return;
      }
      if (this.leaving || FINAL_CLOSE_CODES.has(code)) return;
      const base = Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS * 2 ** this.attempts++);
      this.reconnectTimer = setTimeout(() => {
        this.reconnectTimer = null;
        this.stats.reconnects++;
        this.connect();
      }, base * (0.5 + this.options.random()));
    });
  }

  private onMessage(message: ServerMessage, resolve?: () => void): void {
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
        for (const [requestId, sent] of this.unanswered) this.ws?.send(JSON.stringify({ ...sent, requestId }));
        if (first) for (const overlay of message.overlays) this.react(overlay);
        resolve?.();
        break;
      }
      case 'overlay.show':
        this.react(message.overlay);
        break;
      case 'ack': {
        const sent = message.requestId ? this.unanswered.get(message.requestId) : undefined;
        if (message.requestId) this.unanswered.delete(message.requestId);
        if (sent?.type === 'track') {
          const refused = new Set((message.rejected ?? []).map((r) => r.index));
          for (const r of message.rejected ?? []) this.countError(r.code);
          sent.events.forEach((event, index) => {
            if (refused.has(index)) return;
            this.stats.acknowledged++;
            this.acknowledgedIds.push((event as { eventId: string }).eventId);
          });
        }
        this.settled();
        break;
      }
      case 'error':
        this.countError(message.code);
        if (message.requestId) this.unanswered.delete(message.requestId);
        this.settled();
        break;
    }
  }

  private countError(code: string): void {
    this.stats.errors++;
    this.errorCodes.set(code, (this.errorCodes.get(code) ?? 0) + 1);
  }

  private settled(): void {
    if (this.unanswered.size === 0) this.answered?.();
  }

  /** Sends now if connected; kept until answered either way, and sent again after a reconnect. */
  private send(message: Sent): void {
    if (this.leaving) return;
    const requestId = uuidv7().slice(-12);
    this.unanswered.set(requestId, message);
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify({ ...message, requestId }));
  }

  private track(event: string, data: Record<string, unknown>, commerce: Record<string, unknown> = {}): void {
    this.stats.events++;
    this.send({ type: 'track', sentAt: new Date().toISOString(), events: [{ event, eventId: uuidv7(), timestamp: new Date().toISOString(), data, ...commerce }] });
  }

  private chance(): boolean {
    return this.options.random() < this.options.activity;
  }

  private react(overlay: Overlay): void {
    const later = (fn: () => void) => setTimeout(fn, 200 + this.options.random() * 2_000);
    switch (overlay.type) {
      case 'poll':
        this.track('poll.viewed', { pollId: overlay.id, questionText: overlay.question });
        if (this.chance()) {
          later(() => {
            this.stats.votes++;
            this.send({ type: 'poll.vote', pollId: overlay.id, optionIndex: Math.floor(this.options.random() * overlay.options.length) });
          });
        }
        break;
      case 'contest':
        this.track('contest.viewed', { contestId: overlay.id, title: overlay.title });
        if (this.chance()) later(() => this.send({ type: 'contest.enter', contestId: overlay.id }));
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

import WebSocket from 'ws';
import { uuidv7 } from 'uuidv7';
import type { Overlay, ServerMessage } from '@svc/protocol';

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
  events: number;
  votes: number;
  orders: number;
  errors: number;
}

/**
 * One simulated viewer: joins over the WebSocket, reacts to what it is shown (votes, enters,
 * taps, views and buys products) with some probability, and leaves when told.
 */
export class VirtualViewer {
  readonly sessionId = `svc_sim${uuidv7().replace(/-/g, '')}`;
  readonly stats: ViewerStats = { events: 0, votes: 0, orders: 0, errors: 0 };
  private ws: WebSocket | null = null;
  private joinedAt = 0;

  constructor(private readonly options: ViewerOptions) {}

  join(): Promise<void> {
    const { webSocketBaseURL, apiKey, broadcastId, userId } = this.options;
    const params = new URLSearchParams({ apiKey, sessionId: this.sessionId, contentId: broadcastId, ...(userId ? { userId } : {}) });
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(`${webSocketBaseURL}/v1/ws?${params}`, 'svc.v1');
      this.ws = ws;
      ws.on('message', (data) => {
        const message = JSON.parse(String(data)) as ServerMessage;
        if (message.type === 'welcome') {
          this.joinedAt = Date.now();
          this.track('broadcast.joined', {});
          for (const overlay of message.overlays) this.react(overlay);
          resolve();
        } else if (message.type === 'overlay.show') this.react(message.overlay);
        else if (message.type === 'error') this.stats.errors++;
      });
      ws.on('close', (code, reason) => reject(new Error(`closed ${code} ${String(reason)}`)));
      ws.on('error', (error) => reject(error));
    });
  }

  leave(): void {
    if (!this.ws) return;
    this.track('broadcast.left', { reason: 'closed', watchedMs: Date.now() - this.joinedAt });
    const ws = this.ws;
    this.ws = null;
    setTimeout(() => ws.close(1000), 200);
  }

  private send(message: object): void {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
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

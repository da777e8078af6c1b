import type { Overlay, PollResults, ServerMessage } from '@svc/protocol';
import { ConfigClient, type SvcConfig } from './config-client';
import { SvcError } from './errors';
import { EventQueue, takeBatch, type QueuedEvent } from './event-queue';
import { newSessionId, uuidv7 } from './ids';
import { RETIRED_KEEP_MS, type RetiredOverlay } from './overlay/overlay-schedule';
import { RealtimeConnection, type WelcomeMessage } from './realtime-connection';

export interface ConfigureOptions {
  /** The public API key (`svc_pk_…`) from the dashboard. */
  apiKey: string;
  /** Where the service runs. Default: the origin the SDK script was loaded from. */
  baseURL?: string;
  /** Opaque id of the signed-in user, if any (never an e-mail or another personal datum). */
  userId?: string | null;
  /** Nonce for the overlay's `<style>` under a strict Content-Security-Policy. */
  styleNonce?: string;
}

export interface CommerceFields {
  orderId?: string | null;
  sponsorId?: string | null;
  items?: Array<{ productId: string; name?: string; quantity: number; unitPrice: number; currency: string }>;
  total?: number;
}

export type TrackFields = CommerceFields & { data?: Record<string, unknown> };

type Listener = (payload: unknown) => void;
const ACK_TIMEOUT_MS = 10_000;
/** Answers after which the same events are sent again later. */
const TRANSIENT_CODES = new Set(['internal_error', 'not_ready', 'rate_limited', 'timeout', 'disconnected', 'database_locked', 'storage_unavailable']);

/** What the overlay shows; changes are announced with the `state` event. */
export interface OverlayState {
  config: SvcConfig | null;
  contentId: string | null;
  overlays: Overlay[];
  results: Map<string, PollResults>;
  votes: Map<string, number>;
  contests: Set<string>;
  viewers: number;
  /** Overlays the server hid lately, with when: a viewer behind the live edge still sees them a while. */
  retired: RetiredOverlay[];
}

/** One configured SDK instance (SvcSDK delegates to it). */
export class SvcClient {
  readonly sessionId = newSessionId();
  readonly state: OverlayState = { config: null, contentId: null, overlays: [], results: new Map(), votes: new Map(), contests: new Set(), viewers: 0, retired: [] };
  readonly styleNonce: string | undefined;
  private readonly configClient: ConfigClient;
  private readonly queue: EventQueue;
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly acks = new Map<string, { resolve: (ids: string[]) => void; reject: (error: SvcError) => void }>();
  private readonly viewed = new Set<string>();
  private connection: RealtimeConnection | null = null;
  private joinedAt = 0;
  /** Server clock minus this device's, from the welcome. */
  private serverOffsetMs = 0;
  private userId: string | null;
  private readonly unload: () => void;

  constructor(
    readonly apiKey: string,
    readonly baseURL: string,
    options: ConfigureOptions,
  ) {
    this.userId = options.userId ?? null;
    this.styleNonce = options.styleNonce;
    this.configClient = new ConfigClient(apiKey, baseURL, (config) => this.applyConfig(config));
    this.state.config = this.configClient.config;
    this.queue = new EventQueue(`svc:queue:${apiKey}:`, this.sessionId, (events) => this.sendBatch(events));
    this.unload = () => this.beacon();
    if (typeof window !== 'undefined') {
      window.addEventListener('pagehide', this.unload);
      window.addEventListener('online', () => this.queue.flushSoon());
    }
    void this.configClient.load().then(
      (config) => this.applyConfig(config),
      (error: SvcError) => this.emit('error', error),
    );
  }

  ready(): Promise<SvcConfig> {
    return this.configClient.load();
  }

  /** Resolves once the configuration request of this start has answered. */
  revalidated(): Promise<SvcConfig | null> {
    return this.configClient.revalidated();
  }

  /** Later events carry the new id; a joined broadcast reconnects (same session) so the server knows it too. */
  setUserId(userId: string | null): void {
    if (userId === this.userId) return;
    this.userId = userId;
    this.connection?.reconnect(this.connectionUrl());
  }

  async setContent(id: string): Promise<void> {
    if (typeof id !== 'string' || !id) throw new SvcError('invalid_argument', 'setContent needs the broadcast id (a non-empty string).');
    const config = await this.ready();
    if (this.state.contentId) this.leave();
    this.state.contentId = id;
    await new Promise<void>((resolve, reject) => {
      let welcomed = false;
      const connection = new RealtimeConnection(this.connectionUrl(), {
        open: () => undefined,
        welcome: (message) => {
          this.onWelcome(message);
          // A reconnect after the grace period is a new session for the server, which wrote
          // the broadcast.left of the one before: it gets its own joined and watching time.
          if (!welcomed || !message.session.resumed) {
            this.joinedAt = Date.now();
            this.track('broadcast.joined', { data: {} });
          }
          if (!welcomed) {
            welcomed = true;
            resolve();
          }
          this.queue.flushSoon();
        },
        message: (message) => this.onMessage(message),
        lost: () => this.emit('connection', { open: false }),
        ended: (error) => {
          if (this.connection === connection) this.connection = null;
          if (error) this.emit('error', error);
          if (!welcomed) {
            this.state.contentId = null;
            reject(error ?? new SvcError('disconnected', 'The connection closed before the broadcast was joined.'));
          }
        },
      });
      this.connection = connection;
      connection.open();
    });
  }

  private connectionUrl(): string {
    const params = new URLSearchParams({ apiKey: this.apiKey, sessionId: this.sessionId, contentId: this.state.contentId ?? '' });
    if (this.userId) params.set('userId', this.userId);
    return `${this.state.config?.webSocketBaseURL ?? ''}/v1/ws?${params}`;
  }

  /** Leaves the broadcast: `broadcast.left`, queued events sent by beacon, socket closed. */
  disconnect(): void {
    if (!this.state.contentId) return;
    this.leave();
    this.beacon();
  }

  track(event: string, fields: TrackFields = {}): string {
    const broadcastId = this.state.contentId;
    if (!broadcastId) throw new SvcError('invalid_argument', `Call setContent() before tracking "${event}".`);
    const eventId = uuidv7();
    const record: QueuedEvent = {
      event,
      eventId,
      sessionId: this.sessionId,
      broadcastId,
      timestamp: new Date().toISOString(),
      data: fields.data ?? {},
      ...(this.userId ? { userId: this.userId } : {}),
      ...pickCommerce(fields),
    };
    this.queue.push(record);
    this.emit('track', record);
    this.emit(event, record);
    return eventId;
  }

  /** Tracks a `*.viewed` event once per overlay and session. */
  trackViewed(overlay: Overlay): void {
    if (this.viewed.has(overlay.id)) return;
    this.viewed.add(overlay.id);
    const map: Record<Overlay['type'], [string, Record<string, unknown>]> = {
      poll: ['poll.viewed', { pollId: overlay.id, questionText: overlay.type === 'poll' ? overlay.question : '' }],
      contest: ['contest.viewed', { contestId: overlay.id, title: overlay.type === 'contest' ? overlay.title : '' }],
      lineup: ['lineup.viewed', { lineupId: overlay.id }],
      sponsor_moment: ['sponsor_moment.viewed', { momentId: overlay.id, sponsorId: overlay.type === 'sponsor_moment' ? overlay.sponsorId : '' }],
      product: ['product.viewed', { productId: productIdOf(overlay), placement: overlay.type === 'product' ? overlay.placement : 'carousel' }],
    };
    const [event, data] = map[overlay.type];
    this.track(event, { data, ...(overlay.type === 'product' ? { sponsorId: overlay.sponsorId ?? null } : {}) });
  }

  vote(pollId: string, optionIndex: number): Promise<void> {
    return this.request({ type: 'poll.vote', pollId, optionIndex }).then(() => {
      this.state.votes.set(pollId, optionIndex);
      this.emit('state', this.state);
    });
  }

  enterContest(contestId: string): Promise<void> {
    return this.request({ type: 'contest.enter', contestId }).then(() => {
      this.state.contests.add(contestId);
      this.emit('state', this.state);
    });
  }

  on(name: string, listener: Listener): void {
    let set = this.listeners.get(name);
    if (!set) this.listeners.set(name, (set = new Set()));
    set.add(listener);
  }

  off(name: string, listener: Listener): void {
    this.listeners.get(name)?.delete(listener);
  }

  /** The server's time now (this device's clock corrected by the welcome's `serverTime`). */
  serverNow(): number {
    return Date.now() + this.serverOffsetMs;
  }

  /** Events waiting to be sent (offline or in flight). */
  get pendingEvents(): number {
    return this.queue.size;
  }

  private emit(name: string, payload: unknown): void {
    for (const listener of this.listeners.get(name) ?? []) {
      try {
        listener(payload);
      } catch (error) {
        console.error('[SvcSDK] listener failed', error);
      }
    }
  }

  private applyConfig(config: SvcConfig): void {
    this.state.config = config;
    this.emit('config', config);
    this.emit('state', this.state);
  }

  private onWelcome(message: WelcomeMessage): void {
    const serverTime = Date.parse(message.serverTime);
    if (Number.isFinite(serverTime)) this.serverOffsetMs = serverTime - Date.now();
    // A reconnect keeps what was hidden lately: a viewer behind the live edge has yet to see it go.
    const now = this.serverNow();
    const kept = this.state.retired.filter((r) => r.hiddenAtMs > now - RETIRED_KEEP_MS);
    const goneMeanwhile = this.state.overlays.filter((o) => !message.overlays.some((m) => m.id === o.id)).map((overlay) => ({ overlay, hiddenAtMs: now }));
    this.state.retired = [...kept, ...goneMeanwhile].filter((r) => !message.overlays.some((o) => o.id === r.overlay.id));
    this.state.overlays = message.overlays;
    this.state.results = new Map(message.pollResults.map((r) => [r.pollId, r]));
    this.state.votes = new Map(Object.entries(message.viewer.votes));
    this.state.contests = new Set(message.viewer.contests);
    this.state.viewers = message.viewers;
    this.emit('welcome', message);
    this.emit('connection', { open: true });
    this.emit('state', this.state);
  }

  private onMessage(message: ServerMessage): void {
    switch (message.type) {
      case 'overlay.show':
      case 'overlay.update': {
        // An update keeps the overlay's place (the layout's queue goes by arrival).
        const at = this.state.overlays.findIndex((o) => o.id === message.overlay.id);
        this.state.overlays = at < 0 ? [...this.state.overlays, message.overlay] : this.state.overlays.map((o, i) => (i === at ? message.overlay : o));
        break;
      }
      case 'overlay.hide': {
        const hidden = this.state.overlays.find((o) => o.id === message.overlayId);
        const hiddenAt = Date.parse(message.hiddenAt ?? '');
        const now = this.serverNow();
        this.state.retired = this.state.retired.filter((r) => r.hiddenAtMs > now - RETIRED_KEEP_MS && (!hidden || r.overlay.id !== message.overlayId));
        if (hidden) this.state.retired.push({ overlay: hidden, hiddenAtMs: Number.isFinite(hiddenAt) ? hiddenAt : now });
        this.state.overlays = this.state.overlays.filter((o) => o.id !== message.overlayId);
        break;
      }
      case 'poll.results':
        this.state.results.set(message.pollId, { pollId: message.pollId, counts: message.counts, total: message.total });
        break;
      case 'viewers':
        this.state.viewers = message.count;
        break;
      case 'ack':
      case 'error': {
        const waiting = message.requestId ? this.acks.get(message.requestId) : undefined;
        if (message.requestId) this.acks.delete(message.requestId);
        if (message.type === 'ack') waiting?.resolve(message.ids);
        else {
          const error = new SvcError(message.code, message.detail);
          waiting?.reject(error);
          this.emit('error', error);
        }
        return;
      }
      default:
        return;
    }
    this.emit(message.type, message);
    this.emit('state', this.state);
  }

  /** A request over the socket, answered by an `ack` (resolves) or an `error` (rejects). */
  private request(message: Record<string, unknown>): Promise<string[]> {
    return new Promise((resolve, reject) => {
      const requestId = uuidv7().slice(-12);
      const timer = setTimeout(() => {
        this.acks.delete(requestId);
        reject(new SvcError('timeout', 'No answer from the server.'));
      }, ACK_TIMEOUT_MS);
      this.acks.set(requestId, {
        resolve: (ids) => {
          clearTimeout(timer);
          resolve(ids);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      });
      if (!this.connection?.send({ ...message, requestId })) {
        clearTimeout(timer);
        this.acks.delete(requestId);
        reject(new SvcError('disconnected', 'Not connected to a broadcast.'));
      }
    });
  }

  /**
   * Over the socket when it is open, else an HTTP batch. Returns the ids that are done with
   * (stored, duplicates, or refused for good); throws to have the batch retried later.
   */
  private async sendBatch(events: QueuedEvent[]): Promise<string[]> {
    const done = events.map((e) => e.eventId);
    if (this.connection?.isOpen) {
      try {
        await this.request({ type: 'track', sentAt: new Date().toISOString(), events });
        return done;
      } catch (error) {
        // Refused for good (bad data) is done with; a server or network hiccup is retried.
        if (error instanceof SvcError && !TRANSIENT_CODES.has(error.code)) return done;
        throw error;
      }
    }
    const config = await this.ready();
    const response = await fetch(`${config.restAPIBaseURL}/v1/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-svc-api-key': this.apiKey },
      body: JSON.stringify({ sentAt: new Date().toISOString(), events }),
      keepalive: true,
      credentials: 'omit',
    });
    if (response.status === 429 || response.status >= 500) throw new SvcError('retry', `HTTP ${response.status}`);
    return done;
  }

  private leave(): void {
    this.track('broadcast.left', { data: { reason: 'closed', watchedMs: Math.max(0, Date.now() - this.joinedAt) } });
    const connection = this.connection;
    this.connection = null;
    // Everything queued (broadcast.left included) goes over the socket before it closes, so the
    // server knows the viewer left on purpose; the queue keeps the events until they are
    // acknowledged by HTTP or the beacon (retries are deduplicated by eventId).
    let queued = this.queue.snapshot();
    while (connection?.isOpen && queued.length) {
      const batch = takeBatch(queued);
      connection.send({ type: 'track', sentAt: new Date().toISOString(), events: batch });
      queued = queued.slice(batch.length);
    }
    setTimeout(() => connection?.close(), 50);
    this.state.contentId = null;
    this.state.overlays = [];
    this.state.retired = [];
    this.emit('state', this.state);
  }

  /** Hands every queued event to sendBeacon (they stay queued: a retry is deduplicated). */
  private beacon(): void {
    const events = this.queue.snapshot();
    const config = this.state.config;
    if (!events.length || !config || typeof navigator === 'undefined' || !navigator.sendBeacon) return;
    const url = `${config.restAPIBaseURL}/v1/events?apiKey=${encodeURIComponent(this.apiKey)}`;
    for (let i = 0; i < events.length; i += 100) {
      const body = JSON.stringify({ sentAt: new Date().toISOString(), events: events.slice(i, i + 100) });
      navigator.sendBeacon(url, new Blob([body], { type: 'text/plain' }));
    }
  }
}

function pickCommerce(fields: CommerceFields): CommerceFields {
  const out: CommerceFields = {};
  if (fields.orderId !== undefined) out.orderId = fields.orderId;
  if (fields.sponsorId !== undefined) out.sponsorId = fields.sponsorId;
  if (fields.items !== undefined) out.items = fields.items;
  if (fields.total !== undefined) out.total = fields.total;
  return out;
}

export function productIdOf(overlay: Overlay): string {
  return overlay.type === 'product' ? (overlay.productId ?? overlay.id) : overlay.id;
}

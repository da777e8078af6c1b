import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { LiveViewerRegistry, LocalBus, ManualClock, type Bus, type BusTopic, type BusTopics, type IngestResult, type Overlay } from '@svc/protocol';
import type { ContentStore, Interaction, InteractionStore, OverlayRecord, Tenant } from '@svc/storage';
import { TEST_SETTINGS } from '../../storage/test/test-settings';
import { Gateway, type Connection, type GatewayDeps, type GatewayOptions, type Timers } from '../src';

export const TENANT: Tenant = {
  seq: 1,
  id: 'demo',
  name: 'Demo',
  createdAt: 0,
  retentionMonths: 13,
  settings: TEST_SETTINGS,
};
export const API_KEY = 'svc_pk_harness';

/** Timers that fire only when the test moves the clock on, each at its own time. */
export class ManualTimers implements Timers {
  private readonly due = new Map<number, { at: number; fn: () => void }>();
  private nextId = 1;

  constructor(private readonly clock: ManualClock) {}

  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.nextId++;
    this.due.set(id, { at: this.clock.now() + ms, fn });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.due.delete(handle as number);
  }

  advance(ms: number): void {
    const end = this.clock.now() + ms;
    for (;;) {
      let first: [number, { at: number; fn: () => void }] | undefined;
      for (const entry of this.due) if (entry[1].at <= end && (!first || entry[1].at < first[1].at)) first = entry;
      if (!first) break;
      this.due.delete(first[0]);
      this.clock.set(Math.max(this.clock.now(), first[1].at));
      first[1].fn();
    }
    this.clock.set(end);
  }
}

export interface Message {
  type: string;
  [key: string]: unknown;
}

/** A WebSocket viewer that notes the (manual) clock time each message arrived at. */
export class Viewer {
  readonly messages: Array<{ at: number; message: Message }> = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  private wake: Array<() => void> = [];
  private requests = 0;

  constructor(
    readonly ws: WebSocket,
    private readonly clock: ManualClock,
  ) {
    ws.on('message', (data) => {
      this.messages.push({ at: clock.now(), message: JSON.parse(String(data)) as Message });
      for (const wake of this.wake.splice(0)) wake();
    });
    this.closed = new Promise((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: String(reason) })));
    ws.on('error', () => undefined);
  }

  ofType(type: string): Message[] {
    return this.messages.filter((m) => m.message.type === type).map((m) => m.message);
  }

  async next(predicate: (m: Message) => boolean, timeoutMs = 5_000): Promise<Message> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.messages.find((m) => predicate(m.message));
      if (found) return found.message;
      if (Date.now() > deadline) throw new Error(`no matching message; got ${JSON.stringify(this.messages.map((m) => m.message.type))}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 100);
        this.wake.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Sends and waits for the answer with the same requestId. */
  async request(message: Record<string, unknown>): Promise<Message> {
    const requestId = `q${++this.requests}`;
    this.ws.send(JSON.stringify({ ...message, requestId }));
    return this.next((m) => m.requestId === requestId);
  }

  /** A ping answered: whatever the server sent this viewer before the pong has arrived too. */
  async settle(): Promise<void> {
    await this.request({ type: 'ping' });
  }
}

/** How one connection attempt ended: a socket that opened (and maybe closed), or an HTTP refusal. */
export type Attempt =
  | { kind: 'opened'; viewer: Viewer }
  | { kind: 'refused'; status: number; headers: Record<string, string | string[] | undefined>; body: string };

export interface AttemptOptions {
  apiKey?: string;
  sessionId?: string;
  broadcastId?: string;
  /** Source address, to stand for another client (127.0.0.2 …). */
  localAddress?: string;
}

/** The bus a gateway runs on, and where the rest of the service (content, ingest, tenants) announces to it from. */
export interface HarnessBuses {
  /** The bus of the gateway's node. */
  bus: Bus;
  /** The bus `topic` is announced on: `bus` in one process; on a bus between nodes, another node's for a topic that crosses nodes. */
  announcerOf(topic: BusTopic): Bus;
  /** Resolves once what the gateway subscribed to can arrive from the announcers. */
  ready(): Promise<void>;
  close(): Promise<void>;
}

/** One `LocalBus` for everything: the embedded default. */
export function localBuses(): HarnessBuses {
  const bus = new LocalBus();
  return { bus, announcerOf: () => bus, ready: async () => undefined, close: async () => undefined };
}

/** A bus of the test's own (which the test closes): announced on directly. */
function onlyBus(bus: Bus): HarnessBuses {
  return { bus, announcerOf: () => bus, ready: async () => (bus as Bus & { flush?: () => Promise<void> }).flush?.(), close: async () => undefined };
}

/** How long an announcement may take to reach the gateway's bus (across NATS on a busy machine). */
const ANNOUNCEMENT_WAIT_MS = 5_000;

export interface Harness {
  gateway: Gateway;
  clock: ManualClock;
  timers: ManualTimers;
  bus: Bus;
  /** Where the gateway provides its live viewer counts. */
  liveViewers: LiveViewerRegistry;
  /** Bodies the gateway ingested. */
  ingested: unknown[];
  join(sessionId: string, broadcastId?: string, userId?: string): Promise<Viewer>;
  /** Opens one socket as told and waits until it opened or was refused. */
  attempt(options: AttemptOptions): Promise<Attempt>;
  /** The server side of a session's live connection. */
  connectionOf(sessionId: string): Connection | undefined;
  /**
   * Announces `payload` on `topic` as the rest of the service would, and resolves once the
   * gateway's bus has handed it to the gateway (at once in one process; across NATS, when it
   * arrived), so that a test can rely on the gateway having seen it.
   */
  announce<T extends BusTopic>(topic: T, payload: BusTopics[T]): Promise<void>;
  /** Announces an overlay change of `broadcastId` (`content.changed`), as `announce` does. */
  publish(broadcastId: string, change: { kind: 'show' | 'update'; overlay: Overlay } | { kind: 'hide'; overlayId: string; updatedAt?: string; deleted?: true }): Promise<void>;
  close(): Promise<void>;
}

/**
 * A gateway on a real HTTP server with a manual clock and timers, an in-memory content store
 * holding `overlays`, votes and entries already stored (`interactions`, of every broadcast),
 * and an ingest sink that accepts everything; on `buses` (one `LocalBus` by default, or a bus of
 * the test's own, announced on directly), which it closes. `deps` sets whether counts and caps go
 * across nodes, the viewers' country (none by default), or replaces some of the gateway's
 * dependencies (e.g. `claims`, a `sessionDirectory`, or an `events` sink of the test's own).
 */
export async function startGateway(
  options: Partial<GatewayOptions>,
  overlays: OverlayRecord[] = [],
  stored: Interaction[] = [],
  busOrBuses: HarnessBuses | Bus = localBuses(),
  deps: Partial<GatewayDeps> = {},
): Promise<Harness> {
  const buses = 'announcerOf' in busOrBuses ? busOrBuses : onlyBus(busOrBuses);
  const { bus } = buses;
  const clock = new ManualClock();
  const timers = new ManualTimers(clock);
  const liveViewers = new LiveViewerRegistry();
  const ingested: unknown[] = [];
  const content: Pick<ContentStore, 'listOverlays'> = {
    listOverlays: async (_tenantSeq, broadcastId) => overlays.filter((o) => o.broadcastId === broadcastId),
  };
  const interactions: InteractionStore = { listInteractions: async () => stored };
  const gateway = new Gateway(
    {
      authenticate: async (apiKey) => (apiKey === API_KEY ? TENANT : null),
      country: () => null,
      events: {
        ingest: async ({ body }): Promise<IngestResult> => {
          ingested.push(body);
          return { accepted: 1, duplicates: 0, rejected: [] };
        },
        campaignOf: async () => 1,
      },
      content: content as ContentStore,
      interactions,
      bus,
      liveViewers,
      clock,
      log: { warn: () => undefined, error: () => undefined },
      timers,
      ...deps,
    },
    // The heartbeat runs on real time: keep it out of the way unless a test wants it.
    { heartbeatIntervalMs: 60_000, ...options },
  );
  await buses.ready();
  const server = createServer((_req, res) => res.writeHead(404).end());
  server.on('upgrade', (request, socket, head) => gateway.handleUpgrade(request, socket, head));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  const viewers: Viewer[] = [];
  // Per topic: how many announcements were made, and how many the gateway's bus has handed on
  // (its subscription comes after the gateway's, so the gateway has been called by then).
  const announced = new Map<BusTopic, { sent: number; arrived: number; ends(): void }>();
  const announce = async <T extends BusTopic>(topic: T, payload: BusTopics[T]): Promise<void> => {
    let counts = announced.get(topic);
    if (!counts) {
      const fresh: { sent: number; arrived: number; ends(): void } = { sent: 0, arrived: 0, ends: () => undefined };
      fresh.ends = bus.subscribe(topic, () => void fresh.arrived++);
      announced.set(topic, (counts = fresh));
    }
    const number = ++counts.sent;
    const arrivedCounts = counts;
    await buses.announcerOf(topic).publish(topic, payload);
    const deadline = Date.now() + ANNOUNCEMENT_WAIT_MS;
    while (arrivedCounts.arrived < number) {
      if (Date.now() > deadline) throw new Error(`the gateway's bus did not receive announcement ${number} on ${topic} within ${ANNOUNCEMENT_WAIT_MS} ms`);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  };
  return {
    gateway,
    clock,
    timers,
    bus,
    liveViewers,
    ingested,
    async join(sessionId, broadcastId = 'b', userId) {
      const params = new URLSearchParams({ apiKey: API_KEY, sessionId, contentId: broadcastId, ...(userId === undefined ? {} : { userId }) });
      const viewer = new Viewer(new WebSocket(`ws://127.0.0.1:${port}/v1/ws?${params}`, 'svc.v1'), clock);
      viewers.push(viewer);
      await viewer.next((m) => m.type === 'welcome');
      return viewer;
    },
    attempt({ apiKey = API_KEY, sessionId = `svc_a${viewers.length}`, broadcastId = 'b', localAddress }) {
      const params = new URLSearchParams({ apiKey, sessionId, contentId: broadcastId });
      const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/ws?${params}`, 'svc.v1', { localAddress });
      const viewer = new Viewer(ws, clock);
      viewers.push(viewer);
      return new Promise<Attempt>((resolve, reject) => {
        ws.once('open', () => resolve({ kind: 'opened', viewer }));
        ws.once('unexpected-response', (_request, response) => {
          let body = '';
          response.on('data', (chunk: Buffer) => (body += String(chunk)));
          response.on('end', () => resolve({ kind: 'refused', status: response.statusCode ?? 0, headers: response.headers, body }));
        });
        ws.once('error', reject);
      });
    },
    connectionOf: (sessionId) => gateway.connectionOf(TENANT.seq, sessionId) ?? undefined,
    announce,
    publish: (broadcastId, change) =>
      announce('content.changed', {
        tenantSeq: TENANT.seq,
        broadcastId,
        change: change.kind === 'hide' ? { ...change, hiddenAt: new Date(clock.now()).toISOString() } : change,
      }),
    async close() {
      for (const viewer of viewers) viewer.ws.terminate();
      for (const { ends } of announced.values()) ends();
      await gateway.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await buses.close();
    },
  };
}

/** A stored poll overlay of broadcast `b`, shown. */
export function pollRecord(id: string, options = ['Yes', 'No']): OverlayRecord {
  return { tenantSeq: TENANT.seq, broadcastId: 'b', id, type: 'poll', content: { type: 'poll', question: 'Which?', options }, active: true, createdAt: 0, updatedAt: 0, shownAt: 0 };
}

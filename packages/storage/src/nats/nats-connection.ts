import { connect, type NatsConnection, type Server, type ServerInfo } from '@nats-io/transport-node';
import { SvcError } from '@svc/protocol';
import { STORAGE_RETRY_AFTER_SECONDS } from '../duckdb/duckdb-database';

/** How long the first connection may take before `connectNats` fails. */
export const NATS_CONNECT_TIMEOUT_MS = 5_000;
/** Pause between two reconnection attempts to one server. */
export const NATS_RECONNECT_WAIT_MS = 1_000;
/**
 * How often the client pings its server. A server that dies with its host, or is cut off, closes
 * no socket: only unanswered pings tell, after NATS_MAX_PINGS_OUT of them, and meanwhile the
 * bus between nodes is silent. The client's default (2 min) would leave fan-out silent for up
 * to 6 min; 2 s makes it 4–6 s, for one small message per connection every 2 s.
 */
export const NATS_PING_INTERVAL_MS = 2_000;
/** Pings left unanswered before the client gives the server up and moves to another one. */
export const NATS_MAX_PINGS_OUT = 2;

export interface NatsConnectionOptions {
  /** Shown by the server's monitoring pages (e.g. the node id). */
  name?: string;
  /** Default NATS_CONNECT_TIMEOUT_MS. */
  connectTimeoutMs?: number;
  /** Default NATS_RECONNECT_WAIT_MS. */
  reconnectWaitMs?: number;
  /** Default NATS_PING_INTERVAL_MS. */
  pingIntervalMs?: number;
}

/** `nats://a:4222, nats://b:4222` → the list of servers; surrounding blanks and empty entries dropped. */
export function natsServers(urls: string): string[] {
  return urls.split(',').map((url) => url.trim()).filter((url) => url.length > 0);
}

/**
 * Connects to the first reachable server of a comma list (`SVC_NATS_URL`). Once connected the
 * client reconnects forever, to any server of the list or of the cluster the server gossips:
 * a node must outlive any NATS outage. Publishing while disconnected waits in the client's
 * buffer until the request times out. When no server answers now, rejects with
 * `storage_unavailable` (the caller retries, e.g. a node's start-up readiness loop).
 */
export async function connectNats(urls: string, options: NatsConnectionOptions = {}): Promise<NatsConnection> {
  const servers = natsServers(urls);
  if (!servers.length) throw new Error('No NATS server given: SVC_NATS_URL is empty.');
  try {
    return await connect({
      servers,
      name: options.name,
      timeout: options.connectTimeoutMs ?? NATS_CONNECT_TIMEOUT_MS,
      maxReconnectAttempts: -1,
      reconnectTimeWait: options.reconnectWaitMs ?? NATS_RECONNECT_WAIT_MS,
      pingInterval: options.pingIntervalMs ?? NATS_PING_INTERVAL_MS,
      maxPingOut: NATS_MAX_PINGS_OUT,
      reconnectToServer: serverToDial,
      // Otherwise every request (a JetStream publish per ingest request) builds two Error
      // objects with stack traces in advance, in case it fails: ≈ 3% of a node's main thread
      // under the ingest benchmark. A failed request's error keeps its class and message.
      noAsyncTraces: true,
    });
  } catch (error) {
    // The message names hosts only: a URL may carry a user and password.
    throw new SvcError('storage_unavailable', `No NATS server of ${servers.map(hostOf).join(', ')} can be reached: ${(error as Error).message}.`, {
      cause: error,
      headers: { 'retry-after': String(STORAGE_RETRY_AFTER_SECONDS) },
    });
  }
}

/**
 * Which server a reconnecting client dials: the one dialled least recently. The client's own
 * choice dials first the server it just lost when that was the first of its list; a server that
 * hangs (or whose host is cut off) accepts no handshake, and the dial waits the whole connect
 * timeout before the client tries a live one. On the first connection: the client's choice.
 */
export function serverToDial(pool: ReadonlyArray<Server>, info: ServerInfo | null): Server | null {
  if (info === null || pool.length === 0) return null;
  return pool.reduce((oldest, server) => (server.lastConnect < oldest.lastConnect ? server : oldest));
}

/** `nats://user:secret@host:4222` → `host:4222`. */
function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '(a server URL that does not parse)';
  }
}

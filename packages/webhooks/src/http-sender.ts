import { Agent, buildConnector, request } from 'undici';
import { guardedLookup, isPrivateAddress, systemResolveHost, type ResolveHost } from './url-guard';

/** A delivery counts as failed when the receiver has not answered within this time. */
export const DELIVERY_TIMEOUT_MS = 15_000;
/** Keep-alive connections per receiver origin. */
export const CONNECTIONS_PER_ORIGIN = 8;
/** undici's errors for a connection, an answer's headers or its body that took too long. */
const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);
/** How much of a receiver's answer is read (and then thrown away). */
const MAX_RESPONSE_BYTES = 64 * 1024;

export interface SendResult {
  statusCode: number | null;
  /** Set when no HTTP answer came (refused, timed out, blocked). */
  error: string | null;
  retryAfter: string | undefined;
  latencyMs: number;
}

export interface WebhookSender {
  send(url: string, headers: Record<string, string>, body: string): Promise<SendResult>;
  close(): Promise<void>;
}

/**
 * POSTs over keep-alive connections (undici), never following redirects. Each new connection
 * resolves its host with `resolveHost` (the system resolver by default) and refuses private
 * addresses unless `allowPrivate`; the address a connection actually reached is checked too, so
 * an IP literal (which no lookup sees) or an endpoint saved while private targets were allowed
 * cannot reach inside the network either.
 */
export class HttpWebhookSender implements WebhookSender {
  private readonly agent: Agent;

  constructor(allowPrivate: boolean, private readonly timeoutMs: number = DELIVERY_TIMEOUT_MS, resolveHost: ResolveHost = systemResolveHost) {
    this.agent = new Agent({
      connections: CONNECTIONS_PER_ORIGIN,
      connect: allowPrivate ? { lookup: guardedLookup(true, resolveHost) as never, timeout: timeoutMs } : publicOnlyConnector(guardedLookup(false, resolveHost), timeoutMs),
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
  }

  async send(url: string, headers: Record<string, string>, body: string): Promise<SendResult> {
    const started = performance.now();
    try {
      // The agent's connect and headers timeouts bound the attempt (a timer per request would
      // cost more); the answer's status decides, so its body is read (and thrown away, up to a
      // limit) after the attempt is settled, to free the connection for the next one.
      const response = await request(url, { method: 'POST', headers, body, dispatcher: this.agent });
      response.body.dump({ limit: MAX_RESPONSE_BYTES }).catch(() => undefined);
      const retryAfter = response.headers['retry-after'];
      return {
        statusCode: response.statusCode,
        error: null,
        retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
        latencyMs: Math.round(performance.now() - started),
      };
    } catch (error) {
      const code = (error as { code?: string }).code;
      const message = error instanceof Error ? error.message : String(error);
      const reason =
        code === 'EPRIVATE' ? 'blocked: private address' : code !== undefined && TIMEOUT_CODES.has(code) ? `timeout after ${this.timeoutMs} ms` : `${code ?? 'error'}: ${message}`;
      return { statusCode: null, error: reason.slice(0, 300), retryAfter: undefined, latencyMs: Math.round(performance.now() - started) };
    }
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

/** undici's connector, refusing a socket whose peer is a private or special-purpose address. */
function publicOnlyConnector(lookup: ReturnType<typeof guardedLookup>, timeoutMs: number): buildConnector.connector {
  const connect = buildConnector({ lookup: lookup as never, timeout: timeoutMs });
  return (options, callback) =>
    connect(options, (error, socket) => {
      if (error) return callback(error, null);
      const peer = socket.remoteAddress ?? '';
      if (!isPrivateAddress(peer)) return callback(null, socket);
      socket.destroy();
      callback(Object.assign(new Error(`connection to private address ${peer} refused`), { code: 'EPRIVATE' }), null);
    });
}

import { Agent, request } from 'undici';
import { guardedLookup, systemResolveHost, type ResolveHost } from './url-guard';

/** A delivery counts as failed when the receiver has not answered within this time. */
export const DELIVERY_TIMEOUT_MS = 15_000;
/** Keep-alive connections per receiver origin. */
export const CONNECTIONS_PER_ORIGIN = 8;
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
 * addresses unless `allowPrivate`.
 */
export class HttpWebhookSender implements WebhookSender {
  private readonly agent: Agent;

  constructor(allowPrivate: boolean, private readonly timeoutMs: number = DELIVERY_TIMEOUT_MS, resolveHost: ResolveHost = systemResolveHost) {
    this.agent = new Agent({
      connections: CONNECTIONS_PER_ORIGIN,
      connect: { lookup: guardedLookup(allowPrivate, resolveHost) as never, timeout: timeoutMs },
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
  }

  async send(url: string, headers: Record<string, string>, body: string): Promise<SendResult> {
    const started = performance.now();
    try {
      const response = await request(url, { method: 'POST', headers, body, dispatcher: this.agent, signal: AbortSignal.timeout(this.timeoutMs) });
      let read = 0;
      for await (const chunk of response.body) {
        read += (chunk as Buffer).length;
        if (read > MAX_RESPONSE_BYTES) break;
      }
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
        code === 'EPRIVATE' ? 'blocked: private address' : error instanceof Error && error.name === 'TimeoutError' ? `timeout after ${this.timeoutMs} ms` : `${code ?? 'error'}: ${message}`;
      return { statusCode: null, error: reason.slice(0, 300), retryAfter: undefined, latencyMs: Math.round(performance.now() - started) };
    }
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

import type { Duplex } from 'node:stream';
import { problemFor, SvcError } from '@svc/protocol';

/**
 * Refuses a WebSocket upgrade before its handshake with `429 Too Many Requests`, a
 * problem+json body (`rate_limited`) and `Retry-After`, then closes the socket. Browsers do not
 * show this answer to the page (the socket fails with 1006); other clients can read it.
 */
export function refuseUpgrade(socket: Duplex, retryAfterSeconds: number, detail: string): void {
  const body = JSON.stringify(problemFor(new SvcError('rate_limited', detail)));
  socket.on('error', () => undefined);
  socket.once('finish', () => socket.destroy());
  socket.end(
    'HTTP/1.1 429 Too Many Requests\r\n' +
      'Content-Type: application/problem+json\r\n' +
      `Retry-After: ${retryAfterSeconds}\r\n` +
      'Connection: close\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n` +
      body,
  );
}

import type { FastifyInstance } from 'fastify';

/**
 * An empty body is no body, whatever `Content-Type` says: many clients send
 * `Content-Type: application/json` on every call, body-less ones (DELETE, `/show`) included,
 * and the framework would try to parse nothing as JSON and answer 400. A request without a
 * body (`Content-Length: 0`, or neither it nor `Transfer-Encoding`) loses its content type
 * before parsing, so it reaches its route exactly like one that sent no content type; a route
 * that needs a body then says which field is missing.
 */
export function registerEmptyBodyRule(app: FastifyInstance): void {
  app.addHook('onRequest', async (request) => {
    const { headers } = request.raw;
    // Without Transfer-Encoding, a request has a body only if Content-Length says so (RFC 9112, 6.3).
    const bodyless = headers['transfer-encoding'] === undefined && (headers['content-length'] === undefined || headers['content-length'] === '0');
    if (bodyless && headers['content-type'] !== undefined) {
      delete headers['content-type'];
    }
  });
}

import type { FastifyInstance } from 'fastify';

/**
 * An empty body is no body, whatever `Content-Type` says: many clients send
 * `Content-Type: application/json` on every call, body-less ones (DELETE, `/show`) included,
 * and the framework would try to parse nothing as JSON and answer 400. A request that declares
 * `Content-Length: 0` loses its content type before routing, so it reaches its route exactly
 * like one without a body; a route that needs a body then says which field is missing.
 */
export function registerEmptyBodyRule(app: FastifyInstance): void {
  app.addHook('onRequest', async (request) => {
    const { headers } = request.raw;
    if (headers['content-length'] === '0' && headers['transfer-encoding'] === undefined && headers['content-type'] !== undefined) {
      delete headers['content-type'];
    }
  });
}

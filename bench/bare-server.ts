/**
 * Baseline for the ingest benchmark: a bare Fastify 5 server with one route that lets Fastify
 * parse the JSON body and answers as the real service would, doing nothing else. Listens on
 * 127.0.0.1 and the port in PORT (0 = any free port); prints its address when ready.
 */
import Fastify from 'fastify';

const app = Fastify({ logger: false, bodyLimit: 1024 * 1024 });

app.post('/v1/events', async (request) => {
  const body = request.body as { events: unknown[] };
  return { accepted: body.events.length, duplicates: 0, rejected: [] };
});

await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' });
const address = app.server.address();
const port = typeof address === 'object' && address ? address.port : 0;
process.stdout.write(`Bare server listening on http://127.0.0.1:${port}\n`);

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    void app.close().then(() => process.exit(0), () => process.exit(1));
  });
}

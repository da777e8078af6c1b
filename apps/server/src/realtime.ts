import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';
import proxyAddr from 'proxy-addr';
import { Gateway } from '@svc/realtime';
import { hashUserId } from '@svc/storage';
import type { Services } from './services';

/** The client address of an upgrade request, honouring trusted proxies as Fastify does. */
function addressOf(request: IncomingMessage, trustProxy: boolean | string): string {
  if (!trustProxy) return request.socket.remoteAddress ?? '';
  const trust = trustProxy === true ? () => true : proxyAddr.compile(trustProxy.split(',').map((s) => s.trim()));
  return proxyAddr(request, trust);
}

/** Mounts the WebSocket gateway on the app's HTTP server (`GET /v1/ws` upgrades). */
export function attachGateway(app: FastifyInstance, services: Services): Gateway {
  const { config } = services;
  const gateway = new Gateway(
    {
      authenticate: (apiKey) => services.tenants.authenticateApiKey(apiKey),
      country: (request, tenant) => {
        const header = config.countryHeader ? request.headers[config.countryHeader] : undefined;
        return services.countries.resolve({
          header: typeof header === 'string' ? header : null,
          ip: addressOf(request, config.trustProxy),
          fallback: tenant.settings.fallbackCountry,
        });
      },
      events: services.ingest,
      content: services.storage.content,
      bus: services.bus,
      clock: services.clock,
      log: app.log,
    },
    config.realtime,
  );
  app.server.on('upgrade', (request, socket, head) => gateway.handleUpgrade(request, socket, head));
  // A viewer's own broadcast.left that arrives over HTTP (beacon) spares it the server's one.
  services.ingest.onStored((tenant, source, rows) => {
    if (source !== 'client') return;
    for (const row of rows) if (row.event === 'broadcast.left') gateway.noteClientLeft(tenant.seq, row.sessionId);
  });
  services.analytics.useLiveViewers((tenant, filter) =>
    gateway.liveViewers(
      tenant.seq,
      (broadcastId, campaignId) =>
        (filter.broadcastId === undefined || filter.broadcastId === broadcastId) && (filter.campaignId === undefined || filter.campaignId === campaignId),
      filter.country,
    ),
  );
  // A revoked key stops working at once, for open sockets too.
  services.tenants.onApiKeyRevoked((record) => gateway.disconnectApiKey(record.tenantSeq, record.key));
  // An erased user's sessions carry their userId no more, and what was sent before (over the
  // socket or HTTP) is stored before the erasure runs: nothing with the userId is written after it.
  services.deletions.addListener({
    erasing: async (job, userId) => {
      gateway.forgetUser(job.tenantSeq, (id) => id === userId || hashUserId(id) === job.userHash);
      await services.ingest.settled();
      await services.committer.settled();
    },
    erased: async () => {},
  });
  // Before the HTTP server stops: viewers get 1001 and pending events are written.
  app.addHook('preClose', async () => gateway.close());
  return gateway;
}

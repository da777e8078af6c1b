import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';
import proxyAddr from 'proxy-addr';
import { Gateway, type StoredVote } from '@svc/realtime';
import { hashUserId, type EventRow } from '@svc/storage';
import type { Services } from './services';

/** How to find the client address of an upgrade request, honouring trusted proxies as Fastify's `request.ip` does. */
function clientAddressOf(trustProxy: boolean | string): (request: IncomingMessage) => string {
  if (!trustProxy) return (request) => request.socket.remoteAddress ?? '';
  const trust = trustProxy === true ? () => true : proxyAddr.compile(trustProxy.split(',').map((s) => s.trim()));
  return (request) => proxyAddr(request, trust);
}

/** Mounts the WebSocket gateway on the app's HTTP server (`GET /v1/ws` upgrades). */
export function attachGateway(app: FastifyInstance, services: Services): Gateway {
  const { config } = services;
  const clientAddress = clientAddressOf(config.trustProxy);
  const gateway = new Gateway(
    {
      authenticate: (apiKey) => services.tenants.authenticateApiKey(apiKey),
      country: (request, tenant) => {
        const header = config.countryHeader ? request.headers[config.countryHeader] : undefined;
        return services.countries.resolve({
          header: typeof header === 'string' ? header : null,
          ip: clientAddress(request),
          fallback: tenant.settings.fallbackCountry,
        });
      },
      events: services.ingest,
      content: services.storage.content,
      interactions: services.storage.interactions,
      bus: services.bus,
      clock: services.clock,
      log: app.log,
      clientAddress,
      refused: (reason) => services.metrics.realtimeRefused(reason),
    },
    config.realtime,
  );
  app.server.on('upgrade', (request, socket, head) => gateway.handleUpgrade(request, socket, head));
  // A viewer's own broadcast.left that arrives over HTTP (beacon) spares it the server's one.
  services.ingest.onStored((tenant, source, rows) => {
    if (source !== 'client') return;
    for (const row of rows) if (row.event === 'broadcast.left') gateway.noteClientLeft(tenant.seq, row.sessionId);
  });
  // Votes stored by any path count in the live results of a room by the same rule as a rebuild.
  services.ingest.onStored((tenant, _source, rows) => {
    // Only votes for a room open here are decoded (a JSON.parse per vote took 2% of a node's
    // main thread under the ingest benchmark, where no viewer is connected).
    const votes = rows.filter((row) => row.event === 'poll.voted' && gateway.hasRoom(tenant.seq, row.broadcastId)).map(storedVote);
    if (votes.length) void gateway.noteVotes(tenant.seq, votes);
  });
  services.analytics.useLiveViewers((tenant, filter) =>
    gateway.liveViewers(
      tenant.seq,
      (broadcastId, campaignId) =>
        (filter.broadcastId === undefined || filter.broadcastId === broadcastId) && (filter.campaignId === undefined || filter.campaignId === campaignId),
      filter.country,
    ),
  );
  services.analytics.useLiveViewersByBroadcast((tenant) => gateway.liveViewersByBroadcast(tenant.seq));
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

function storedVote(row: EventRow): StoredVote {
  const data = JSON.parse(row.data) as { pollId: string; optionIndex?: unknown; optionSelected?: unknown };
  return {
    pollId: data.pollId,
    eventId: row.eventId,
    sessionId: row.sessionId,
    userId: row.userId,
    broadcastId: row.broadcastId,
    timestampMs: row.timestampMs,
    receivedAtMs: row.receivedAtMs,
    optionIndex: typeof data.optionIndex === 'number' ? data.optionIndex : -1,
    optionSelected: data.optionSelected,
  };
}

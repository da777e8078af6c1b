import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';
import proxyAddr from 'proxy-addr';
import { Gateway } from '@svc/realtime';
import type { Services } from './services';

/** How to find the client address of an upgrade request, honouring trusted proxies as Fastify's `request.ip` does. */
function clientAddressOf(trustProxy: boolean | string): (request: IncomingMessage) => string {
  if (!trustProxy) return (request) => request.socket.remoteAddress ?? '';
  const trust = trustProxy === true ? () => true : proxyAddr.compile(trustProxy.split(',').map((s) => s.trim()));
  return (request) => proxyAddr(request, trust);
}

/**
 * Mounts the WebSocket gateway on the app's HTTP server (`GET /v1/ws` upgrades). The gateway
 * follows the bus itself (overlay changes, stored votes, viewers' own `broadcast.left`, revoked
 * keys, erasures) and provides the dashboard's live viewer counts.
 */
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
      // Full cluster mode's claims give a viewer one vote and one entry across the nodes.
      claims: services.storage.claims,
      liveViewers: services.liveViewers,
      // Full cluster mode's bus carries every node's counts to the others.
      viewerCountsAcrossNodes: services.storage.bus !== undefined,
      // Full cluster mode's shared directory: a session resumes on another node.
      sessionDirectory: services.storage.sessionDirectory,
      clock: services.clock,
      log: app.log,
      clientAddress,
      refused: (reason) => services.metrics.realtimeRefused(reason),
    },
    config.realtime,
  );
  // Sockets open through an upgrade, for /metrics (the gateway keeps its own count to itself).
  let openSockets = 0;
  services.metrics.watchWebSocketConnections(() => openSockets);
  app.server.on('upgrade', (request, socket, head) => {
    openSockets++;
    socket.once('close', () => openSockets--);
    gateway.handleUpgrade(request, socket, head);
  });
  // Before the HTTP server stops: viewers get 1001 and pending events are written.
  app.addHook('preClose', async () => gateway.close());
  return gateway;
}

# Svc's container image: `docker build -t svc .`, then `docker run -p 8080:8080 svc` (embedded
# storage in /var/lib/svc) or with the cluster variables of docs/operations.md ("Full cluster
# mode"); docker-compose.yml runs a whole cluster. docs/cluster.md, "Deploy", says more.

# Build stage: every dependency, to bundle the SDK and the dashboard once (esbuild), so that the
# server never builds them at start (`npm start`'s prestart does on a developer's machine).
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json ./
COPY apps ./apps
COPY packages ./packages
RUN npm ci --no-audit --no-fund && npm run build --silent

# Runtime stage: production dependencies only. The server runs its TypeScript through tsx (a
# production dependency of apps/server), so the sources are the program.
FROM node:24-bookworm-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    SVC_DATA_DIR=/var/lib/svc
WORKDIR /app
COPY package.json package-lock.json tsconfig.json ./
COPY apps ./apps
COPY packages ./packages
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force \
 && mkdir -p /var/lib/svc && chown node:node /var/lib/svc
COPY --from=build /app/packages/sdk/dist ./packages/sdk/dist
COPY --from=build /app/apps/dashboard/dist ./apps/dashboard/dist

# The official image's unprivileged user (uid 1000); it owns only the data folder.
USER node
EXPOSE 8080
# Liveness: the process answers. Readiness (/readyz: the stores answer) is the load balancer's
# and Kubernetes' business, not a reason to restart the container. A node listens only once its
# engines answer (it waits up to a minute for them) and the sources are compiled (about 15 s on a
# busy 2-core machine): hence the start period.
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# serve.ts shuts down cleanly on SIGTERM: 503 to new requests, sockets closed, queued events
# committed, in-flight deliveries finished, stores closed.
STOPSIGNAL SIGTERM
CMD ["node", "apps/server/bin/svc.js", "serve"]

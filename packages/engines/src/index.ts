export { freePort } from './free-port';
export { aptGetLine, CLICKHOUSE_SERVER_BIN, ENGINES, HAPROXY_BIN, missingEngines, NATS_SERVER_BIN, POSTGRES_BIN_DIR, type Engine } from './engine-binaries';
export type { EngineOptions } from './engine-options';
export { createDatabaseOn, startPostgres, type PostgresServer } from './postgres-server';
export { startClickHouse, type ClickHouseServer } from './clickhouse-server';
export { startNats, startNatsCluster, type NatsCluster, type NatsServer } from './nats-server';
export {
  backendStates,
  HAPROXY_SOCKET,
  haproxyConfig,
  HEALTH_CHECK_INTERVAL_MS,
  NO_NODE_CODES,
  NO_NODE_ERRORFILE,
  NO_NODE_PROBLEM,
  noNodeResponse,
  startHaproxy,
  type LoadBalancer,
  type LoadBalancerBackend,
} from './haproxy-server';

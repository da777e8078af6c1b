export * from './records';
export * from './event-store';
export * from './meta-store';
export * from './deletion-job-store';
export * from './user-erasure-store';
export * from './content-store';
export * from './webhook-endpoint-store';
export * from './webhook-delivery-store';
export * from './interaction-store';
export * from './analytics-store';
export * from './session-store';
export { DuckDbDatabase, DATABASE_FILE_NAME, type DatabaseOptions } from './duckdb/duckdb-database';
export { DuckDbEventStore } from './duckdb/duckdb-event-store';
export { DuckDbMetaStore } from './duckdb/duckdb-meta-store';
export { DuckDbDeletionStore } from './duckdb/duckdb-deletion-store';
export { DuckDbContentStore } from './duckdb/duckdb-content-store';
export { DuckDbWebhookStore } from './duckdb/duckdb-webhook-store';
export { DuckDbAnalyticsStore } from './duckdb/duckdb-analytics-store';
export { DuckDbSessionStore } from './duckdb/duckdb-session-store';
export { rebuildRollups } from './duckdb/analytics-rollups';
export { openEmbeddedStorage, type Storage, type EventPipeline, type PipelineObserver } from './open-storage';
export { UNDECODABLE_EVENTS_TABLE, type UndecodableEvent } from './duckdb/undecodable-events';
export { PgDatabase, DEFAULT_POOL_SIZE, type PgDatabaseOptions } from './postgres/pg-database';
export { PgMetaStore } from './postgres/pg-meta-store';
export { PgWebhookEndpointStore } from './postgres/pg-webhook-endpoint-store';
export { PgDeletionJobStore } from './postgres/pg-deletion-job-store';
export { PgSessionStore } from './postgres/pg-session-store';
export { PgContentStore } from './postgres/pg-content-store';
export * from './metadata-importer';
export * from './metadata-copy';
export { PgMetadataImporter } from './postgres/pg-metadata-importer';
export { openClusterStorage, type ClusterStorageOptions } from './open-cluster-storage';
export { openOperatorStorage, type OperatorStorage } from './open-operator-storage';
export * from './metadata-change-feed';
export { InProcessChangeFeed } from './in-process-change-feed';
export { PgChangeFeed, METADATA_CHANGE_CHANNEL, DEFAULT_LISTEN_CHECK_INTERVAL_MS, type PgChangeFeedOptions } from './postgres/pg-change-feed';
export { PollCopyingContentStore } from './poll-copying-content-store';
export { ChDatabase, chNumber, DEFAULT_MAX_EXECUTION_TIME_SECONDS, DEFAULT_REQUEST_TIMEOUT_MS, type ChDatabaseOptions, type ChRow } from './clickhouse/ch-database';
export { CH_MIGRATIONS, type ChMigration } from './clickhouse/ch-migrations';
export { dataFieldValues } from './clickhouse/data-fields';
export { chErrorCode, isChUnavailable } from './clickhouse/ch-failure';
export { ClickHouseAnalyticsStore } from './clickhouse/clickhouse-analytics-store';
export { ROLLUP_QUIET_SECONDS, ROLLUP_SETTLE_SECONDS, type RollupDerivationOptions } from './clickhouse/ch-rollup-deriver';
export type { PollLookup } from './clickhouse/ch-poll-results';
export { ClickHouseEventStore } from './clickhouse/clickhouse-event-store';
export { RecentKeys } from './recent-keys';
export { ClickHouseErasureStore, DEFAULT_PART_REMOVAL_WAIT_MS, type ClickHouseErasureOptions } from './clickhouse/clickhouse-erasure-store';
export { ClickHouseInteractionStore } from './clickhouse/clickhouse-interaction-store';
export { connectNats, natsServers, NATS_CONNECT_TIMEOUT_MS, NATS_RECONNECT_WAIT_MS, type NatsConnectionOptions } from './nats/nats-connection';
export { NATS_MAX_PINGS_OUT, NATS_PING_INTERVAL_MS, serverToDial } from './nats/nats-connection';
export {
  EventLog,
  EVENTS_STREAM,
  EVENTS_SUBJECT_PREFIX,
  EVENTS_DUPLICATE_WINDOW_MS,
  EVENTS_PUBLISH_TIMEOUT_MS,
  POSITION_POLL_INTERVAL_MS,
  type EventLogOptions,
} from './nats/event-log';
export { JetStreamEventStore, RECENT_EVENT_KEYS_PER_GENERATION } from './nats/jetstream-event-store';
export {
  EventLogWriter,
  WRITER_BATCH_WAIT_MS,
  WRITER_BATCH_BYTES,
  WRITER_ACK_WAIT_MS,
  WRITER_RETRY_DELAY_MS,
  type EventLogWriterOptions,
} from './nats/event-log-writer';
export { WRITER_CONSUMER } from './nats/writer-consumer';
export type { ErasingSince } from './nats/erasing-users';
export { NatsBus, BUS_SUBJECT_PREFIX, BUS_ORIGIN_HEADER, type NatsBusOptions } from './nats/nats-bus';
export * from './webhook-queue';
export { PgWebhookDeliveryStore } from './postgres/pg-webhook-delivery-store';
export { PgErasureTombstones, DEFAULT_TOMBSTONE_REFRESH_MS, TOMBSTONE_HORIZON_MS } from './postgres/pg-erasure-tombstones';
export { DeliveryQueue, WEBHOOK_STREAM, WEBHOOK_SUBJECT_PREFIX, WEBHOOK_CONSUMER, DEFAULT_ACK_WAIT_MS, type DeliveryQueueOptions } from './nats/delivery-queue';
export { openEventClusterStorage, splitClickHouseUrl, DEFAULT_CLICKHOUSE_DATABASE, type EventClusterStorageOptions } from './open-event-cluster-storage';
export { UnfinishedErasures, UNFINISHED_ERASURES_MAX_AGE_MS } from './nats/unfinished-erasures';
export { PipelineErasureStore, ERASURE_WRITER_WAIT_MS } from './nats/pipeline-erasure-store';
export { AckedMessageSweep, sweepAckedMessages, ACKED_MESSAGE_SWEEP_INTERVAL_MS, type SweptQueue, type AckedMessageSweepOptions } from './nats/acked-message-sweep';
export type { StoredEventKey } from './nats/event-log-writer';
export { type EncodedEvents, type EncodedEventSink } from './encoded-events';
export { type SplitEncodedEventSink } from './encoded-events';
export { EventLogWriterThread, type EventLogWriterThreadOptions } from './nats/writer-thread';
export * from './viewer-claims';
export { MemoryViewerClaims } from './memory-viewer-claims';
export { NatsViewerClaims, CLAIMS_BUCKET, CLAIMS_TTL_MS, CLAIM_TIMEOUT_MS, type NatsViewerClaimsOptions } from './nats/nats-viewer-claims';
export { MemorySessionDirectory, sessionDirectoryKey, sameOpenSession, removalOf, SESSION_DIRECTORY_MAX_AGE_MS, type FoundSession, type OpenSession, type SessionDirectory, type SessionRemoval } from './session-directory';
export { NatsSessionDirectory, SESSIONS_BUCKET, SESSION_DIRECTORY_TIMEOUT_MS, type NatsSessionDirectoryOptions } from './nats/nats-session-directory';
export { ConsumerLagReader, CONSUMER_LAG_CACHE_MS, type ConsumerLag, type WatchedConsumer, type ConsumerLagOptions } from './nats/consumer-lag';
export { BusRoundTrip, BUS_PING_INTERVAL_MS, BUS_PING_TIMEOUT_MS, BUS_PING_SUBJECT_PREFIX, type BusRoundTripOptions } from './nats/bus-round-trip';
export type { WriterBatchReport } from './nats/event-log-writer';

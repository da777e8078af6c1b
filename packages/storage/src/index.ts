export * from './records';
export * from './event-store';
export * from './meta-store';
export * from './deletion-store';
export { DuckDbDatabase, DATABASE_FILE_NAME } from './duckdb/duckdb-database';
export { DuckDbEventStore } from './duckdb/duckdb-event-store';
export { DuckDbMetaStore } from './duckdb/duckdb-meta-store';
export { DuckDbDeletionStore } from './duckdb/duckdb-deletion-store';
export { openEmbeddedStorage, type Storage } from './open-storage';

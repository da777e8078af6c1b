export * from './event-validator';
export * from './country-resolver';
export * from './group-committer';
export * from './ingest-service';
export * from './quarantine-payload';

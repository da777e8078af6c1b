export * from './bucket-size';
export * from './analytics-service';
export * from './largest-remainder';
export * from './viewer-buckets';
export * from './revenue-buckets';
export * from './live-overview-feed';

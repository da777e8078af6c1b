export * from './bucket-size';
export * from './analytics-service';

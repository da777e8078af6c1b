export * from './overlay-validator';
export * from './content-service';
export * from './poll-catalogue';

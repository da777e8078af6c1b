export * from './overlay-validator';
export * from './content-service';
export * from './poll-catalogue';
export * from './overlay-view';

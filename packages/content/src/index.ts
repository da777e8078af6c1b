export * from './overlay-validator';
export * from './content-service';

export * from './credentials';
export * from './tenant-settings';
export * from './tenant-service';
export * from './sdk-config';

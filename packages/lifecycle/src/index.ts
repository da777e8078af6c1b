export * from './calendar';
export * from './retention-purger';
export * from './deletion-service';
export * from './erasure-purger';

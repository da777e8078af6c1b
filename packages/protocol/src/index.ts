export * from './event-names';
export * from './event-types';
export * from './event-schemas';
export * from './ids';
export * from './error-catalogue';
export * from './pii-guard';
export * from './clock-skew';
export * from './clock';

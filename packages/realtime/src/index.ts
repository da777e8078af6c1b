export * from './bus';
export * from './throttle';
export * from './room';
export * from './connection';
export * from './gateway';
export * from './overlay-view';
export * from './address-admission';
export * from './message-budget';

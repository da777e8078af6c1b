export * from './throttle';
export * from './room';
export * from './connection';
export * from './gateway';
export * from './gateway-subscriptions';
export * from './address-admission';
export * from './message-budget';
export * from './room-registry';

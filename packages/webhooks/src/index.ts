export * from './signature';
export * from './retry-schedule';
export * from './url-guard';
export * from './http-sender';
export * from './dispatcher';
export * from './webhook-service';
export * from './send-attempt';
export * from './queue-dispatcher';

export * from './csv';
export * from './export-query';
export * from './export-cursor';
export * from './export-service';

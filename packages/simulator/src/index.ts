export * from './virtual-viewer';
export * from './simulation';

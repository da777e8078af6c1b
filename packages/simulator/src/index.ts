export * from './virtual-viewer';
export * from './simulation';
export * from './sample-dataset';

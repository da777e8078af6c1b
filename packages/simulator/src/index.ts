export * from './virtual-viewer';
export * from './simulation';
export * from './stored-check';
export * from './sample-dataset';

// The writer thread's entry: the service runs its TypeScript through tsx's loader, which a
// worker thread does not inherit, so it registers it here before loading the writer.
import { register } from 'tsx/esm/api';

register();
await import('./writer-thread-worker.ts');

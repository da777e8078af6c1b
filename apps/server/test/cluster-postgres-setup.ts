import type { TestProject } from 'vitest/node';
import { postgresAvailable, startPostgres } from '../../../packages/storage/test/postgres-server';

declare module 'vitest' {
  export interface ProvidedContext {
    /** URL of the throwaway PostgreSQL server that `startTestApp` runs on when SVC_TEST_POSTGRES=1 (absent otherwise). */
    testPostgresUrl?: string;
  }
}

/**
 * Vitest global setup: with SVC_TEST_POSTGRES=1, one throwaway PostgreSQL server for the whole
 * run, on which every `startTestApp` gets a database of its own (cluster storage); without it,
 * nothing. Locally a missing PostgreSQL leaves the apps on the embedded storage, with a warning;
 * in CI it fails the run.
 */
export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  if (!process.env.SVC_TEST_POSTGRES) return undefined;
  if (!postgresAvailable()) {
    console.warn('SVC_TEST_POSTGRES=1 without PostgreSQL: the test apps run on the embedded storage only.');
    return undefined;
  }
  const server = await startPostgres();
  project.provide('testPostgresUrl', server.url);
  return () => server.stop();
}

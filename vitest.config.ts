import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['packages/*/{src,test}/**/*.test.ts', 'apps/*/{src,test}/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // DuckDB work runs on libuv threads; keep two test files in flight on a 2-core machine.
    maxWorkers: 2,
    reporters: ['default', './tools/summary-reporter.ts'],
    // With SVC_TEST_POSTGRES=1 the HTTP test apps run on cluster storage (see test-app.ts).
    globalSetup: ['./apps/server/test/cluster-postgres-setup.ts'],
  },
});

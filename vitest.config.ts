import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['packages/*/{src,test}/**/*.test.ts', 'apps/*/{src,test}/**/*.test.ts', 'bench/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // DuckDB work runs on libuv threads; keep two test files in flight on a 2-core machine.
    maxWorkers: 2,
    reporters: ['default', './tools/summary-reporter.ts'],
    // Temporary files in one folder per run, removed at its end; with SVC_TEST_POSTGRES=1 the
    // HTTP test apps run on cluster storage (see test-app.ts).
    globalSetup: ['./tools/test-tmpdir-setup.ts', './apps/server/test/cluster-postgres-setup.ts'],
  },
});

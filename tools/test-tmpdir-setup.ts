import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Vitest global setup: the run's temporary files (data folders, engines' folders, exports) go
 * into one folder of their own, removed when the run ends, instead of thousands of folders
 * left in the system's temporary folder. `TMPDIR` is set before the test workers and the
 * servers they start are made, so `os.tmpdir()` gives that folder everywhere. What is made
 * once per machine on purpose (the PostgreSQL template) stays in `SVC_TEST_SHARED_TMPDIR`.
 */
export default function setup(): () => void {
  const shared = tmpdir();
  const root = mkdtempSync(join(shared, 'svc-run-'));
  // As the system's temporary folder: engines that run as users of their own (PostgreSQL as
  // postgres) make their folders in it too.
  chmodSync(root, 0o1777);
  process.env.SVC_TEST_SHARED_TMPDIR = shared;
  process.env.TMPDIR = root;
  return () => {
    process.env.TMPDIR = shared;
    rmSync(root, { recursive: true, force: true, maxRetries: 3 });
  };
}

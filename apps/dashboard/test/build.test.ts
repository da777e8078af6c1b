import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildDashboard, type DashboardManifest } from '../build';

/** The budget: JavaScript a first visit transfers, compressed. */
const FIRST_VISIT_JS_BUDGET_BYTES = 150_000;

describe('dashboard build', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-dashboard-'));
  let manifest: DashboardManifest;
  beforeAll(async () => {
    manifest = await buildDashboard(dir);
  }, 60_000);

  it('keeps the compressed script of a first visit within 150 KB', () => {
    const plain = readFileSync(join(dir, manifest.script));
    const br = readFileSync(join(dir, `${manifest.script}.br`));
    const gz = readFileSync(join(dir, `${manifest.script}.gz`));
    expect(brotliDecompressSync(br).equals(plain)).toBe(true);
    expect(gunzipSync(gz).equals(plain)).toBe(true);
    expect(br.length).toBeLessThanOrEqual(FIRST_VISIT_JS_BUDGET_BYTES);
    expect(gz.length).toBeLessThanOrEqual(FIRST_VISIT_JS_BUDGET_BYTES);
  });

  it('names the script by its content and removes the files of earlier builds', async () => {
    const again = await buildDashboard(dir);
    expect(again.script).toBe(manifest.script);
    const files = readdirSync(dir).sort();
    expect(files).toEqual(['dashboard.js', manifest.script, `${manifest.script}.br`, `${manifest.script}.gz`, 'manifest.json'].sort());
    expect(statSync(join(dir, 'dashboard.js')).size).toBe(statSync(join(dir, manifest.script)).size);
  });
});

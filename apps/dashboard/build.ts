import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const HERE = dirname(fileURLToPath(import.meta.url));
export const DASHBOARD_DIST = join(HERE, 'dist');

/** Bundles the dashboard single-page app into dist/dashboard.js. */
export async function buildDashboard(outDir: string = DASHBOARD_DIST): Promise<string> {
  mkdirSync(outDir, { recursive: true });
  const result = await build({
    entryPoints: [join(HERE, 'src', 'main.ts')],
    bundle: true,
    minify: true,
    format: 'iife',
    target: 'es2020',
    legalComments: 'none',
    write: false,
  });
  const file = join(outDir, 'dashboard.js');
  writeFileSync(file, result.outputFiles[0]!.contents);
  return file;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  process.stdout.write(`Dashboard built: ${await buildDashboard()}\n`);
}

import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type BuildOptions } from 'esbuild';

export const SDK_DIST = join(dirname(fileURLToPath(import.meta.url)), 'dist');
const ENTRY = join(dirname(fileURLToPath(import.meta.url)), 'src', 'index.ts');

/** Bundles of SvcCore: ESM and an IIFE that defines window.SvcSDK and window.SvcEngagementOverlay. */
export async function buildSdk(outDir: string = SDK_DIST): Promise<{ esm: string; iife: string }> {
  mkdirSync(outDir, { recursive: true });
  const common: BuildOptions & { write: false } = { entryPoints: [ENTRY], bundle: true, minify: true, target: 'es2020', legalComments: 'none', write: false };
  const [esm, iife] = await Promise.all([
    build({ ...common, format: 'esm' }),
    build({
      ...common,
      format: 'iife',
      globalName: 'SvcCore',
      define: { 'import.meta.url': '""' },
      footer: { js: 'window.SvcSDK=SvcCore.SvcSDK;window.SvcEngagementOverlay=SvcCore.SvcEngagementOverlay;' },
    }),
  ]);
  const files = { esm: join(outDir, 'svc-core.mjs'), iife: join(outDir, 'svc-core.js') };
  writeFileSync(files.esm, esm.outputFiles[0]!.contents);
  writeFileSync(files.iife, iife.outputFiles[0]!.contents);
  return files;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const files = await buildSdk();
  process.stdout.write(`SDK built: ${files.esm}, ${files.iife}\n`);
}

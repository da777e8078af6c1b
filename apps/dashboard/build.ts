import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const HERE = dirname(fileURLToPath(import.meta.url));
export const DASHBOARD_DIST = join(HERE, 'dist');
/** Written last by a build, so a reader that finds it finds every file it names. */
export const MANIFEST_FILE = 'manifest.json';
/** Hex digits of the content hash in an asset's name: enough that two builds never collide in practice. */
const HASH_HEX_DIGITS = 12;

/** What a build produced: the content-hashed name of the script, each with `.br` and `.gz` beside it. */
export interface DashboardManifest {
  script: string;
}

/** Writes through a temporary name, so a server reading the folder never sees half a file. */
function writeAtomically(file: string, contents: Uint8Array): void {
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, contents);
  renameSync(temporary, file);
}

/**
 * Bundles the dashboard single-page app into dist/dashboard-<hash>.js with its brotli and gzip
 * versions (compressed once here, at the highest levels, not per request), plus `dashboard.js`
 * for pages loaded before a deploy. Files of earlier builds are removed.
 */
export async function buildDashboard(outDir: string = DASHBOARD_DIST): Promise<DashboardManifest> {
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
  const contents = result.outputFiles[0]!.contents;
  const hash = createHash('sha256').update(contents).digest('hex').slice(0, HASH_HEX_DIGITS);
  const script = `dashboard-${hash}.js`;
  writeAtomically(join(outDir, script), contents);
  writeAtomically(join(outDir, `${script}.br`), brotliCompressSync(contents, { params: { [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY, [constants.BROTLI_PARAM_SIZE_HINT]: contents.length } }));
  writeAtomically(join(outDir, `${script}.gz`), gzipSync(contents, { level: constants.Z_BEST_COMPRESSION }));
  writeAtomically(join(outDir, 'dashboard.js'), contents);
  for (const name of readdirSync(outDir)) {
    if (/^dashboard-[0-9a-f]+\.js(\.br|\.gz)?$/.test(name) && !name.startsWith(script)) rmSync(join(outDir, name), { force: true });
  }
  const manifest: DashboardManifest = { script };
  writeAtomically(join(outDir, MANIFEST_FILE), Buffer.from(JSON.stringify(manifest)));
  return manifest;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  process.stdout.write(`Dashboard built: ${JSON.stringify(await buildDashboard())}\n`);
}

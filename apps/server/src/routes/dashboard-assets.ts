import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildDashboard, DASHBOARD_DIST, MANIFEST_FILE, type DashboardManifest } from '@svc/dashboard/build';

/** The encodings a build stores beside each asset, best first. */
export const STORED_ENCODINGS = ['br', 'gzip'] as const;
export type StoredEncoding = (typeof STORED_ENCODINGS)[number];
const SUFFIX: Record<StoredEncoding, string> = { br: '.br', gzip: '.gz' };

/** One asset as built: the plain bytes and each precompressed version. */
export interface BuiltAsset {
  identity: Buffer;
  encoded: Record<StoredEncoding, Buffer>;
}

/** The dashboard's built files, read once (built first if the folder is empty: a fresh clone without `npm run build`). */
export class DashboardAssets {
  private loading: Promise<{ manifest: DashboardManifest; assets: Map<string, BuiltAsset> }> | null = null;

  constructor(private readonly dir: string = DASHBOARD_DIST) {}

  /** The content-hashed script name the page refers to. */
  async scriptName(): Promise<string> {
    return (await this.load()).manifest.script;
  }

  /** The asset of that name, or undefined when no build made it. */
  async asset(name: string): Promise<BuiltAsset | undefined> {
    return (await this.load()).assets.get(name);
  }

  private load() {
    return (this.loading ??= (async () => {
      const manifestPath = join(this.dir, MANIFEST_FILE);
      const manifest: DashboardManifest = existsSync(manifestPath) ? JSON.parse(readFileSync(manifestPath, 'utf8')) : await buildDashboard(this.dir);
      const read = (name: string): BuiltAsset => ({
        identity: readFileSync(join(this.dir, name)),
        encoded: { br: readFileSync(join(this.dir, name + SUFFIX.br)), gzip: readFileSync(join(this.dir, name + SUFFIX.gzip)) },
      });
      return { manifest, assets: new Map([[manifest.script, read(manifest.script)]]) };
    })().catch((error: unknown) => {
      this.loading = null;
      throw error;
    }));
  }
}

/**
 * The best stored encoding the client accepts (RFC 9110 §12.5.3: `q=0` refuses one, `*`
 * stands for any not named), or null for the plain bytes.
 */
export function preferredEncoding(acceptEncoding: string | undefined): StoredEncoding | null {
  if (!acceptEncoding) return null;
  const weights = new Map<string, number>();
  for (const part of acceptEncoding.split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    if (!name) continue;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const weight = q ? Number(q.slice(2)) : 1;
    weights.set(name, Number.isFinite(weight) ? weight : 0);
  }
  let best: StoredEncoding | null = null;
  let bestWeight = 0;
  for (const encoding of STORED_ENCODINGS) {
    const weight = weights.get(encoding) ?? weights.get('*') ?? 0;
    if (weight > bestWeight) [best, bestWeight] = [encoding, weight];
  }
  return best;
}

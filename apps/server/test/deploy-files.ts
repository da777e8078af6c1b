import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join, relative } from 'node:path';
import { parseAllDocuments } from 'yaml';

/** The checkout's root: the deployment files' paths are relative to it. */
export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export function readRepoFile(path: string): string {
  return readFileSync(join(REPO_ROOT, path), 'utf8');
}

export function repoPathExists(path: string): boolean {
  return existsSync(join(REPO_ROOT, path));
}

/** A path inside the checkout as the deployment files write it (relative, with `/`). */
export function repoRelative(absolute: string): string {
  return relative(REPO_ROOT, absolute).split('\\').join('/');
}

/** Every YAML document of a file, as plain data; fails on any YAML error or warning. */
export function readYamlDocuments(path: string): unknown[] {
  return parseAllDocuments(readRepoFile(path)).map((document) => {
    const problems = [...document.errors, ...document.warnings];
    if (problems.length) throw new Error(`${path}: ${problems.map((problem) => problem.message).join('; ')}`);
    return document.toJS();
  });
}

/**
 * Whether `.dockerignore` lines keep `path` out of the build context: Docker's rules for the
 * patterns used here (`*` within a name, `**` across folders, a match on a folder covers what
 * it holds, `!` re-includes).
 */
export function dockerIgnored(path: string, dockerignore: string): boolean {
  const patterns = dockerignore.split('\n').map((line) => line.trim()).filter((line) => line && !line.startsWith('#'));
  const parts = path.split('/');
  const prefixes = parts.map((_, index) => parts.slice(0, index + 1).join('/'));
  let ignored = false;
  for (const pattern of patterns) {
    const negated = pattern.startsWith('!');
    const matcher = globRegExp(negated ? pattern.slice(1) : pattern);
    if (prefixes.some((prefix) => matcher.test(prefix))) ignored = !negated;
  }
  return ignored;
}

function globRegExp(glob: string): RegExp {
  const body = glob
    .replace(/^\/+|\/+$/g, '')
    .split('/')
    .map((segment) => (segment === '**' ? '(?:.*)' : segment.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]')))
    .join('/')
    .replace(/\(\?:\.\*\)\//g, '(?:.*/)?');
  return new RegExp(`^${body}$`);
}

/** Whether the server's configuration (apps/server/src/config.ts) reads `variable`. */
export function readsVariable(variable: string): boolean {
  const source = readRepoFile('apps/server/src/config.ts');
  return new RegExp(`\\benv\\.${variable}\\b|'${variable}'`).test(source);
}

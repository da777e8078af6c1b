import { DockerfileParser, type Instruction } from 'dockerfile-ast';
import { describe, expect, it } from 'vitest';
import { DASHBOARD_DIST } from '@svc/dashboard/build';
import { SDK_DIST } from '@svc/sdk/build';
import { DEFAULT_PORT } from '../src/config';
import { dockerIgnored, readRepoFile, repoPathExists, repoRelative } from './deploy-files';
import { startTestApp } from './test-app';

// The container image's Dockerfile, checked statically: no Docker engine runs here.
const dockerfile = DockerfileParser.parse(readRepoFile('Dockerfile'));
const dockerignore = readRepoFile('.dockerignore');
const instructions = dockerfile.getInstructions();
const stageStarts = instructions.flatMap((instruction, index) => (instruction.getKeyword() === 'FROM' ? [index] : []));
/** The instructions of the last stage: the image that runs. */
const finalStage = instructions.slice(stageStarts.at(-1));

function keyword(stage: Instruction[], name: string): Instruction[] {
  return stage.filter((instruction) => instruction.getKeyword() === name);
}

function args(instruction: Instruction): string[] {
  return instruction.getArguments().map((argument) => argument.getValue());
}

/** `ENV` values of the final stage (both `KEY=value` and `KEY value` forms). */
function finalEnv(): Map<string, string> {
  const env = new Map<string, string>();
  for (const instruction of dockerfile.getENVs()) {
    if (instruction.getRange().start.line < finalStage[0]!.getRange().start.line) continue;
    for (const property of instruction.getProperties()) env.set(property.getName(), property.getValue() ?? '');
  }
  return env;
}

describe('Dockerfile', () => {
  it('builds in stages on Node.js 24, the current LTS, for build and runtime alike', () => {
    const froms = dockerfile.getFROMs();
    expect(froms.length).toBeGreaterThanOrEqual(2);
    for (const from of froms) {
      expect(from.getImageName()).toBe('node');
      expect(from.getImageTag()).toMatch(/^24(-|$)/);
    }
  });

  it('runs as an unprivileged user', () => {
    const users = keyword(finalStage, 'USER').map((instruction) => args(instruction)[0]);
    expect(users.length).toBeGreaterThan(0);
    expect(users.at(-1)).not.toMatch(/^(root|0)(:|$)/);
  });

  it('listens on every interface at the default port, and exposes that port', () => {
    const env = finalEnv();
    expect(env.get('HOST')).toBe('0.0.0.0');
    const exposed = keyword(finalStage, 'EXPOSE').flatMap(args);
    expect(exposed).toEqual([String(DEFAULT_PORT)]);
    expect(env.get('PORT') ?? String(DEFAULT_PORT)).toBe(String(DEFAULT_PORT));
  });

  it('runs `svc serve` directly under node, so that node receives SIGTERM', () => {
    const [cmd] = dockerfile.getCMDs().slice(-1);
    const argv = cmd!.getJSONStrings().map((value) => value.getJSONValue());
    expect(argv).toEqual(['node', 'apps/server/bin/svc.js', 'serve']);
    expect(repoPathExists(argv[1]!)).toBe(true);
    expect(keyword(finalStage, 'ENTRYPOINT')).toEqual([]);
    expect(keyword(finalStage, 'STOPSIGNAL').flatMap(args)).toEqual(['SIGTERM']);
  });

  it('installs only production dependencies in the image that runs, and builds the bundles in the build stage', () => {
    const finalRuns = keyword(finalStage, 'RUN').map((instruction) => instruction.getArgumentsContent() ?? '');
    expect(finalRuns.some((run) => /npm ci\b.*--omit=dev/.test(run))).toBe(true);
    expect(finalRuns.some((run) => /npm (run )?build|npm start/.test(run))).toBe(false);
    const buildRuns = instructions.slice(0, stageStarts.at(-1)).filter((instruction) => instruction.getKeyword() === 'RUN');
    expect(buildRuns.some((run) => /npm run build/.test(run.getArgumentsContent() ?? ''))).toBe(true);
  });

  it('copies from the build stage exactly the folders the server serves the bundles from', () => {
    const fromBuild = dockerfile.getCOPYs().filter((copy) => copy.getFromFlag());
    const sources = fromBuild.map((copy) => args(copy)[0]!.replace(/^\/app\//, ''));
    expect(sources.sort()).toEqual([repoRelative(DASHBOARD_DIST), repoRelative(SDK_DIST)].sort());
  });

  it('copies only files that exist in the checkout and that .dockerignore lets into the build context', () => {
    const sources = dockerfile.getCOPYs().filter((copy) => !copy.getFromFlag()).flatMap((copy) => args(copy).slice(0, -1));
    expect(sources.length).toBeGreaterThan(0);
    for (const source of sources) {
      expect(repoPathExists(source), source).toBe(true);
      expect(dockerIgnored(source, dockerignore), source).toBe(false);
    }
    // What the server needs at run time is in the context; local state and tests are not.
    for (const needed of ['apps/server/bin/svc.js', 'apps/server/src/serve.ts', 'packages/storage/src/index.ts']) {
      expect(dockerIgnored(needed, dockerignore), needed).toBe(false);
    }
    for (const kept of ['node_modules/fastify/package.json', 'apps/server/node_modules/x', 'data/svc.duckdb', '.git/HEAD', 'packages/sdk/dist/svc-core.js', 'apps/server/test/deploy-image.test.ts']) {
      expect(dockerIgnored(kept, dockerignore), kept).toBe(true);
    }
  });

  it('checks health on /healthz, a path the server answers with 200', async () => {
    const [healthcheck] = dockerfile.getHEALTHCHECKs();
    const command = healthcheck!.getRawArgumentsContent() ?? '';
    const path = /\/(healthz|readyz)\b/.exec(command)?.[0];
    expect(path).toBe('/healthz');
    const t = await startTestApp();
    try {
      expect((await t.app.inject({ url: path })).statusCode).toBe(200);
    } finally {
      await t.close();
    }
  });
});

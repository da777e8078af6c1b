import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { NO_NODE_CODES, noNodeResponse } from '@svc/engines';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { DEFAULT_PORT, loadConfig } from '../src/config';
import { NATS_SERVER_BIN } from '../../../packages/storage/test/nats-server';
import { REPO_ROOT, readRepoFile, readsVariable, repoPathExists } from './deploy-files';

// docker-compose.yml, checked without a Docker engine: against the Compose Specification's
// schema, and for what the services refer to (files, variables, one another).
const COMPOSE_FILE = 'docker-compose.yml';
/** Debian's HAProxy (2.6), when installed: it checks the load balancer's configuration itself. */
const HAPROXY_BIN = '/usr/sbin/haproxy';

interface ComposeService {
  image?: string;
  build?: string | { context: string };
  environment?: Record<string, string | number | boolean | null>;
  volumes?: (string | { type: string; source?: string })[];
  depends_on?: Record<string, { condition: string }>;
  networks?: Record<string, { ipv4_address?: string } | null>;
  ports?: string[];
  healthcheck?: { test: string[] };
}

/** Compose reads merge keys (`<<`) the YAML 1.1 way. */
const compose = parse(readRepoFile(COMPOSE_FILE), { merge: true }) as { services: Record<string, ComposeService> };
const services = compose.services;
const svcNodes = Object.entries(services).filter(([, service]) => service.build !== undefined || service.image?.startsWith('svc:'));

/** `${NAME}`, `${NAME:-default}` and `${NAME-default}` as Compose replaces them, with `variables` set. */
function interpolate(value: string, variables: Record<string, string> = {}): string {
  return value.replace(/\$\{([A-Z0-9_]+)(:?-([^}]*))?\}/g, (_match, name: string, fallback: string | undefined, text: string | undefined) => {
    const set = variables[name];
    if (set !== undefined && !(fallback?.startsWith(':') && set === '')) return set;
    return fallback === undefined ? '' : text ?? '';
  });
}

function environmentOf(service: ComposeService): Record<string, string> {
  return Object.fromEntries(Object.entries(service.environment ?? {}).map(([name, value]) => [name, interpolate(String(value ?? ''))]));
}

/** The host side of the bind mounts of a service (paths relative to the compose file). */
function boundFiles(service: ComposeService): string[] {
  return (service.volumes ?? []).flatMap((volume) => {
    const source = typeof volume === 'string' ? volume.split(':')[0]! : volume.type === 'bind' ? volume.source ?? '' : '';
    return source.startsWith('./') || source.startsWith('../') || source.startsWith('/') ? [source] : [];
  });
}

describe('docker-compose.yml', () => {
  it('is valid under the Compose Specification schema', () => {
    const schema = JSON.parse(readRepoFile('deploy/schemas/compose-spec.json')) as Record<string, unknown>;
    // The schema names draft-07 by an https URL that Ajv's bundled meta-schema does not carry.
    delete schema.$schema;
    const validate = new Ajv({ strict: false, allErrors: true }).compile(schema);
    const valid = validate(compose);
    expect(validate.errors ?? [], JSON.stringify(validate.errors, null, 2)).toEqual([]);
    expect(valid).toBe(true);
    // The check can fail: a service with an unknown key is refused.
    expect(validate({ services: { svc: { image: 'svc', restart_policy: 'always' } } })).toBe(false);
  });

  it('runs three NATS servers, PostgreSQL, ClickHouse, three Svc nodes and a load balancer, each image pinned to a version', () => {
    expect(svcNodes.map(([name]) => name).sort()).toEqual(['svc-1', 'svc-2', 'svc-3']);
    const engines = Object.entries(services).filter(([, service]) => !svcNodes.some(([, node]) => node === service));
    const images = Object.fromEntries(engines.map(([name, service]) => [name, service.image ?? '']));
    expect(Object.keys(images).sort()).toEqual(['clickhouse', 'lb', 'nats-1', 'nats-2', 'nats-3', 'postgres']);
    for (const [name, image] of Object.entries(images)) expect(image, name).toMatch(/^[a-z0-9./-]+:\d+(\.\d+)*(-[a-z]+)?$/);
  });

  it('builds the Svc nodes from the Dockerfile and starts them only once every engine is healthy', () => {
    const engines = ['postgres', 'clickhouse', 'nats-1', 'nats-2', 'nats-3'];
    for (const [name, node] of svcNodes) {
      const context = typeof node.build === 'string' ? node.build : node.build?.context;
      expect(context, name).toBe('.');
      expect(repoPathExists('Dockerfile')).toBe(true);
      expect(Object.keys(node.depends_on ?? {}).sort(), name).toEqual([...engines].sort());
      for (const engine of engines) {
        expect(node.depends_on![engine]!.condition, `${name} → ${engine}`).toBe('service_healthy');
        expect(services[engine]!.healthcheck?.test.length, engine).toBeGreaterThan(0);
      }
    }
  });

  it('gives the nodes settings the server reads, for full cluster mode on the services of the file', () => {
    const nodeIds = new Set<string>();
    for (const [name, node] of svcNodes) {
      const env = environmentOf(node);
      for (const variable of Object.keys(env)) expect(readsVariable(variable), `${name}: ${variable}`).toBe(true);
      const config = loadConfig({ ...env, HOST: '0.0.0.0' });
      expect(config.natsServers?.map((url) => new URL(url).hostname).sort()).toEqual(['nats-1', 'nats-2', 'nats-3']);
      expect(config.natsReplicas).toBe(3);
      expect(new URL(config.postgresUrl!).hostname).toBe('postgres');
      expect(new URL(config.clickhouseUrl!).hostname).toBe('clickhouse');
      expect(config.port).toBe(DEFAULT_PORT);
      // Only the load balancer's X-Forwarded-For is believed.
      expect(config.trustProxy).toBe(services.lb!.networks?.default?.ipv4_address);
      nodeIds.add(config.nodeId);
    }
    expect(nodeIds.size).toBe(svcNodes.length);
    // The passwords in the URLs are the ones the engines are given.
    const env = environmentOf(svcNodes[0]![1]);
    expect(decodeURIComponent(new URL(env.SVC_POSTGRES_URL!).password)).toBe(environmentOf(services.postgres!).POSTGRES_PASSWORD);
    expect(decodeURIComponent(new URL(env.SVC_CLICKHOUSE_URL!).password)).toBe(environmentOf(services.clickhouse!).CLICKHOUSE_PASSWORD);
  });

  it('mounts only files that exist in the checkout', () => {
    const mounted = Object.values(services).flatMap(boundFiles);
    expect(mounted.length).toBeGreaterThan(0);
    for (const file of mounted) expect(repoPathExists(file), file).toBe(true);
  });

  it('forms one NATS cluster of the three servers, with JetStream and a health endpoint', () => {
    const natsConf = readRepoFile('deploy/compose/nats.conf');
    const routes = [...natsConf.matchAll(/nats-route:\/\/([a-z0-9-]+):6222/g)].map((match) => match[1]);
    expect(routes.sort()).toEqual(['nats-1', 'nats-2', 'nats-3']);
    expect(natsConf).toMatch(/^jetstream\s*\{/m);
    expect(natsConf).toMatch(/^http:\s*0\.0\.0\.0:8222$/m);
    for (const name of ['nats-1', 'nats-2', 'nats-3']) {
      expect(services[name]!.healthcheck!.test.join(' ')).toContain(':8222/healthz?js-enabled-only=true');
      expect(environmentOf(services[name]!).NATS_NAME).toBe(name);
    }
  });

  it('puts a WebSocket-aware load balancer checking /readyz in front of every node', () => {
    const lb = services.lb!;
    const config = readRepoFile(boundFiles(lb)[0]!.replace(/^\.\//, ''));
    const servers = [...config.matchAll(/^\s*server\s+(\S+)\s+([a-z0-9-]+):(\d+)/gm)].map((match) => ({ host: match[2], port: Number(match[3]) }));
    expect(servers.map((server) => server.host).sort()).toEqual(svcNodes.map(([name]) => name).sort());
    for (const server of servers) expect(server.port).toBe(DEFAULT_PORT);
    expect(config).toMatch(/http-check send meth GET uri \/readyz\b/);
    // An idle WebSocket must outlive the heartbeat: HAProxy's tunnel timeout, not its client timeout.
    expect(config).toMatch(/timeout tunnel\s+\d+[hm]\b/);
    expect(lb.ports).toContain(`${DEFAULT_PORT}:${/bind :(\d+)/.exec(config)![1]}`);
  });

  it.skipIf(!existsSync(HAPROXY_BIN))('has a load balancer configuration that HAProxy itself accepts', () => {
    // The files as the container sees them: each bind mount's target read from its source here.
    let config = readRepoFile('deploy/compose/haproxy.cfg');
    for (const volume of services.lb!.volumes ?? []) {
      const [source, target] = String(volume).split(':') as [string, string];
      config = config.split(target).join(join(REPO_ROOT, source));
    }
    const folder = mkdtempSync(join(tmpdir(), 'svc-compose-haproxy-'));
    try {
      writeFileSync(join(folder, 'haproxy.cfg'), config);
      // Exit status 0 (valid); the node names resolve only inside the compose network, a warning here.
      const output = execFileSync(HAPROXY_BIN, ['-c', '-f', join(folder, 'haproxy.cfg')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
      expect(output).toContain('Configuration file is valid');
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it("answers what HAProxy says itself (502, 503, 504) with the service's 503 problem and Retry-After", () => {
    expect(readRepoFile('deploy/compose/no-node.http')).toBe(noNodeResponse());
    expect(services.lb!.volumes).toContain('./deploy/compose/no-node.http:/usr/local/etc/haproxy/no-node.http:ro');
    const config = readRepoFile('deploy/compose/haproxy.cfg');
    for (const code of NO_NODE_CODES) expect(config).toContain(`errorfile ${code} /usr/local/etc/haproxy/no-node.http`);
  });

  it.skipIf(!existsSync(NATS_SERVER_BIN))('has a NATS configuration that nats-server itself accepts, with the name of each server set', () => {
    for (const name of ['nats-1', 'nats-2', 'nats-3']) {
      const file = join(REPO_ROOT, boundFiles(services[name]!)[0]!);
      const check = spawnSync(NATS_SERVER_BIN, ['-c', file, '-t'], { encoding: 'utf8', env: { ...process.env, ...environmentOf(services[name]!) } });
      expect(check.status, check.stdout + check.stderr).toBe(0);
      expect(check.stdout + check.stderr).toContain('is valid');
    }
  });
});

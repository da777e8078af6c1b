import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isMap, isScalar, parseAllDocuments, type Document } from 'yaml';
import { EVENTS_PUBLISH_TIMEOUT_MS, WRITER_ACK_WAIT_MS } from '@svc/storage';
import { DELIVERY_TIMEOUT_MS } from '@svc/webhooks';
import { NATS_SERVER_BIN } from '../../../packages/storage/test/nats-server';
import { DEFAULT_PORT, loadConfig } from '../src/config';
import { REPO_ROOT, readRepoFile, readsVariable, readYamlDocuments, repoPathExists } from './deploy-files';
import { startTestApp } from './test-app';

// The Kubernetes manifests (a kustomize layout), checked against the Kubernetes object schemas
// of npm kubernetes-models and for what they refer to: no cluster runs here.
const DIR = 'deploy/kubernetes';

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  [field: string]: unknown;
}

interface Probe {
  httpGet?: { path: string; port: string | number };
  periodSeconds?: number;
  failureThreshold?: number;
}

interface Container {
  name: string;
  image: string;
  args?: string[];
  ports?: { name?: string; containerPort: number }[];
  env?: { name: string; value?: string }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  startupProbe?: Probe;
  lifecycle?: { preStop?: { exec?: { command: string[] } } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
}

interface PodTemplate {
  metadata: { labels: Record<string, string> };
  spec: { containers: Container[]; terminationGracePeriodSeconds?: number };
}

const kustomization = readYamlDocuments(`${DIR}/kustomization.yaml`)[0] as { resources: string[]; images?: { name: string }[] };
const manifests = kustomization.resources.flatMap((file) => readYamlDocuments(`${DIR}/${file}`) as Manifest[]);

function find(kind: string, name: string): Manifest {
  const found = manifests.find((manifest) => manifest.kind === kind && manifest.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in ${DIR}`);
  return found;
}

const deployment = find('Deployment', 'svc') as Manifest & { spec: { replicas: number; selector: { matchLabels: Record<string, string> }; template: PodTemplate } };
const container = deployment.spec.template.spec.containers.find((candidate) => candidate.name === 'svc')!;

/** The model class of kubernetes-models for an object's apiVersion and kind (`apps/v1` → apps/v1/Deployment). */
async function modelOf(manifest: Manifest): Promise<new (data: unknown) => { validate(): void }> {
  const module = (await import(`kubernetes-models/${manifest.apiVersion}/${manifest.kind}`)) as Record<string, new (data: unknown) => { validate(): void }>;
  const model = module[manifest.kind];
  if (!model) throw new Error(`kubernetes-models has no ${manifest.apiVersion} ${manifest.kind}`);
  return model;
}

/** The node's environment as the pod gets it: the ConfigMap and Secret it names, then `env`. */
function podEnvironment(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const source of container.envFrom ?? []) {
    if (source.configMapRef) Object.assign(env, (find('ConfigMap', source.configMapRef.name) as Manifest & { data: Record<string, string> }).data);
    if (source.secretRef) Object.assign(env, (find('Secret', source.secretRef.name) as Manifest & { stringData: Record<string, string> }).stringData);
  }
  for (const variable of container.env ?? []) env[variable.name] = variable.value ?? `${variable.name.toLowerCase()}-from-the-pod`;
  return env;
}

/** The comment written just above `path` in the document (on its key), or ''. */
function commentAbove(document: Document, path: (string | number)[]): string {
  const parent = document.getIn(path.slice(0, -1), true);
  if (!isMap(parent)) return '';
  const at = parent.items.findIndex((item) => isScalar(item.key) && item.key.value === path.at(-1));
  const key = parent.items[at]?.key;
  // The parser gives a comment above a map's first key to the map itself.
  return (isScalar(key) && key.commentBefore) || (at === 0 && parent.commentBefore) || '';
}

describe('Kubernetes manifests', () => {
  it('lists every manifest of the folder in kustomization.yaml, and only files that exist', () => {
    const files = readdirSync(join(REPO_ROOT, DIR)).filter((file) => file.endsWith('.yaml') && file !== 'kustomization.yaml');
    expect([...kustomization.resources].sort()).toEqual(files.sort());
    for (const file of kustomization.resources) expect(repoPathExists(`${DIR}/${file}`), file).toBe(true);
    expect(kustomization.images?.map((image) => image.name)).toContain(container.image);
  });

  it('validates every object against the Kubernetes object schemas', async () => {
    expect(manifests.length).toBeGreaterThanOrEqual(9);
    for (const manifest of manifests) {
      const Model = await modelOf(manifest);
      expect(() => new Model(manifest).validate(), `${manifest.kind} ${manifest.metadata.name}`).not.toThrow();
    }
    // The check can fail: a port given as text is refused.
    const broken = structuredClone(deployment);
    broken.spec.template.spec.containers[0]!.ports![0]!.containerPort = 'http' as unknown as number;
    const Deployment = await modelOf(broken);
    expect(() => new Deployment(broken).validate()).toThrow(/containerPort/);
  });

  it('runs three Svc nodes, with a disruption budget and a Service selecting them on the port the image listens on', () => {
    expect(deployment.spec.replicas).toBe(3);
    const labels = deployment.spec.template.metadata.labels;
    const selects = (selector: Record<string, string>) => Object.entries(selector).every(([key, value]) => labels[key] === value);
    expect(selects(deployment.spec.selector.matchLabels)).toBe(true);
    const budget = find('PodDisruptionBudget', 'svc') as Manifest & { spec: { selector: { matchLabels: Record<string, string> }; maxUnavailable?: number } };
    expect(selects(budget.spec.selector.matchLabels)).toBe(true);
    expect(budget.spec.maxUnavailable).toBe(1);
    const service = find('Service', 'svc') as Manifest & { spec: { selector: Record<string, string>; ports: { targetPort: string | number }[] } };
    expect(selects(service.spec.selector)).toBe(true);
    const http = container.ports!.find((port) => port.name === service.spec.ports[0]!.targetPort || port.containerPort === service.spec.ports[0]!.targetPort);
    expect(http?.containerPort).toBe(DEFAULT_PORT);
    expect(loadConfig(podEnvironment()).port).toBe(DEFAULT_PORT);
  });

  it('probes readiness on /readyz and liveness on /healthz, paths the server answers', async () => {
    expect(container.readinessProbe?.httpGet?.path).toBe('/readyz');
    expect(container.livenessProbe?.httpGet?.path).toBe('/healthz');
    expect(container.startupProbe?.httpGet?.path).toBe('/healthz');
    for (const probe of [container.readinessProbe, container.livenessProbe, container.startupProbe]) {
      expect(container.ports!.some((port) => port.name === probe!.httpGet!.port || port.containerPort === probe!.httpGet!.port)).toBe(true);
    }
    // A node waits up to a minute for its engines before it listens: the startup probe waits longer.
    expect(container.startupProbe!.periodSeconds! * container.startupProbe!.failureThreshold!).toBeGreaterThan(60);
    const t = await startTestApp();
    try {
      for (const probe of [container.readinessProbe, container.livenessProbe, container.startupProbe]) {
        expect((await t.app.inject({ url: probe!.httpGet!.path })).statusCode, probe!.httpGet!.path).toBe(200);
      }
    } finally {
      await t.close();
    }
  });

  it('gives a node time to drain before it is killed: preStop, webhook attempts and publishes in flight, the writer batch', () => {
    const preStop = container.lifecycle?.preStop?.exec?.command ?? [];
    expect(preStop[0]).toBe('sleep');
    const preStopSeconds = Number(preStop[1]);
    // The writer's insert in flight: batches of about a second, a few seconds on a slow ClickHouse.
    const writerBatchSeconds = 5;
    const needed = preStopSeconds + DELIVERY_TIMEOUT_MS / 1000 + EVENTS_PUBLISH_TIMEOUT_MS / 1000 + writerBatchSeconds;
    expect(deployment.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(needed);
    // Not so long that a stuck node delays a rollout by more than JetStream's own take-over.
    expect(deployment.spec.template.spec.terminationGracePeriodSeconds).toBeLessThanOrEqual(WRITER_ACK_WAIT_MS / 1000);
  });

  it('sizes the requests and limits with a comment saying where each figure comes from', () => {
    const [document] = parseAllDocuments(readRepoFile(`${DIR}/svc-deployment.yaml`));
    const index = deployment.spec.template.spec.containers.indexOf(container);
    for (const [kind, resource] of [['requests', 'cpu'], ['requests', 'memory'], ['limits', 'cpu'], ['limits', 'memory']] as const) {
      expect(container.resources?.[kind]?.[resource], `${kind}.${resource}`).toBeTruthy();
      const comment = commentAbove(document!, ['spec', 'template', 'spec', 'containers', index, 'resources', kind, resource]);
      expect(comment, `${kind}.${resource}`).toMatch(/benchmarks\.md|cluster\.md|fanout|cluster ingest/i);
    }
  });

  it('configures full cluster mode with settings the server reads, on the NATS servers of the StatefulSet', () => {
    const env = podEnvironment();
    for (const variable of Object.keys(env)) expect(readsVariable(variable), variable).toBe(true);
    const config = loadConfig(env);
    expect(config.postgresUrl).toBeTruthy();
    expect(config.clickhouseUrl).toBeTruthy();
    const nats = find('StatefulSet', 'nats') as Manifest & { spec: { replicas: number; serviceName: string } };
    const pods = Array.from({ length: nats.spec.replicas }, (_, i) => `nats-${i}.${nats.spec.serviceName}`);
    expect(config.natsServers?.map((url) => new URL(url).hostname)).toEqual(pods);
    expect(config.natsReplicas).toBe(nats.spec.replicas);
    const natsConf = (find('ConfigMap', 'nats-config') as Manifest & { data: Record<string, string> }).data['nats.conf']!;
    expect([...natsConf.matchAll(/nats-route:\/\/([a-z0-9.-]+):6222/g)].map((match) => match[1])).toEqual(pods);
    // Each node is named after its pod.
    expect(container.env?.find((variable) => variable.name === 'SVC_NODE_ID')).toBeTruthy();
  });

  it.skipIf(!existsSync(NATS_SERVER_BIN))('gives the NATS servers a configuration that nats-server itself accepts, named by the pod', () => {
    const natsConf = (find('ConfigMap', 'nats-config') as Manifest & { data: Record<string, string> }).data['nats.conf']!;
    const statefulSet = find('StatefulSet', 'nats') as Manifest & { spec: { template: PodTemplate } };
    const env = Object.fromEntries((statefulSet.spec.template.spec.containers[0]!.env ?? []).map((variable) => [variable.name, 'nats-0']));
    const dir = mkdtempSync(join(tmpdir(), 'svc-nats-conf-'));
    try {
      writeFileSync(join(dir, 'nats.conf'), natsConf);
      const check = spawnSync(NATS_SERVER_BIN, ['-c', join(dir, 'nats.conf'), '-t'], { encoding: 'utf8', env: { ...process.env, ...env } });
      expect(check.status, check.stdout + check.stderr).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

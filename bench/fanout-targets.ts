import { request } from 'undici';
import { base62 } from './ingest';
import { startServer, startService, tempFolder, type Child, READY_LINE, ROOT } from './processes';

export const BROADCAST = 'bench-fanout';
export const POLL = { type: 'poll', question: 'Who scores the next goal?', options: ['Home team', 'Away team', 'Nobody', 'Both'] };

/** What the servers of one side do for the benchmark; the service and the bare baseline differ only here. */
export interface Target {
  name: string;
  /** The server processes viewers connect to (several for a cluster's nodes). */
  nodes: Child[];
  /** ws://…/v1/ws?… without sessionId, one per node: viewers take them in turn. */
  viewerUrls: string[];
  welcomePrefix: string;
  /** Before a cycle (not timed): the service creates a fresh poll; both warm the admin connection. */
  prepare(cycle: number): Promise<string>;
  /** The timed trigger: resolves when the server answered, with how long its send loop took when it says. */
  show(overlayId: string): Promise<number | undefined>;
  hide(overlayId: string): Promise<number | undefined>;
  stop(): Promise<void>;
}

async function post(url: string, headers: Record<string, string>, body?: string): Promise<{ status: number; text: string }> {
  const response = await request(url, { method: 'POST', headers, body });
  return { status: response.statusCode, text: await response.body.text() };
}

/** Bootstrap credentials of a service target's nodes. */
export interface ServiceCredentials {
  apiKey: string;
  adminToken: string;
}

export function newCredentials(): ServiceCredentials {
  return { apiKey: `svc_pk_${base62(32)}`, adminToken: `svc_sk_${base62(32)}` };
}

/**
 * What a service node of the fan-out benchmarks is started with: its bootstrap credentials, and
 * the per-address limits lifted, since each client process stands for thousands of viewers from one address.
 */
export function serviceEnv(credentials: ServiceCredentials): Record<string, string> {
  return {
    SVC_BOOTSTRAP_API_KEY: credentials.apiKey,
    SVC_BOOTSTRAP_ADMIN_TOKEN: credentials.adminToken,
    SVC_WS_MAX_CONNECTIONS_PER_ADDRESS: '100000',
    SVC_WS_UPGRADES_PER_ADDRESS: '0',
  };
}

/**
 * Running service nodes as a target: viewers connect to the nodes in turn, the admin calls
 * (broadcast, polls, show, hide) go to the first node. Registers the broadcast under a new
 * campaign; `release` runs after the nodes stopped (their folders, databases).
 */
export async function serviceTarget(name: string, nodes: Child[], credentials: ServiceCredentials, release: () => Promise<void> | void): Promise<Target> {
  const admin = adminClient(nodes[0]!.url, credentials.adminToken);
  const target: Target = {
    name,
    nodes,
    viewerUrls: nodes.map((node) => `${node.url.replace('http:', 'ws:')}/v1/ws?apiKey=${credentials.apiKey}&contentId=${BROADCAST}`),
    welcomePrefix: '{"type":"welcome"',
    prepare: async () => (await admin(`/v1/broadcasts/${BROADCAST}/overlays`, 201, POLL)).id,
    show: async (id) => void (await admin(`/v1/broadcasts/${BROADCAST}/overlays/${id}/show`, 200)),
    hide: async (id) => void (await admin(`/v1/broadcasts/${BROADCAST}/overlays/${id}/hide`, 200)),
    async stop() {
      try {
        await Promise.all(nodes.map((node) => node.stop(30_000)));
      } finally {
        await release();
      }
    },
  };
  try {
    const campaign = await admin('/v1/campaigns', 201, { name: 'Fan-out benchmark' });
    await admin('/v1/broadcasts', 201, { id: BROADCAST, campaignId: campaign.id });
  } catch (error) {
    await target.stop();
    throw error;
  }
  return target;
}

function adminClient(origin: string, adminToken: string) {
  const json = { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' };
  const bare = { authorization: `Bearer ${adminToken}` };
  return async (path: string, expected: number, body?: object) => {
    const answer = await post(origin + path, body ? json : bare, body ? JSON.stringify(body) : undefined);
    if (answer.status !== expected) throw new Error(`POST ${path}: HTTP ${answer.status} ${answer.text.slice(0, 300)}`);
    return JSON.parse(answer.text) as { id: string };
  };
}

/** One embedded service process (DuckDB in a fresh data folder) as a target. */
export async function startEmbeddedTarget(name: string): Promise<Target> {
  const dataDir = tempFolder('svc-bench-fanout-');
  const credentials = newCredentials();
  let child: Child;
  try {
    child = await startService(dataDir.path, serviceEnv(credentials));
  } catch (error) {
    dataDir.remove();
    throw error;
  }
  return serviceTarget(name, [child], credentials, () => dataDir.remove());
}

export async function startBaselineTarget(showFrame: string, hideFrame: string): Promise<Target> {
  const child = await startServer({
    name: 'bare ws server',
    command: process.execPath,
    args: ['--import', 'tsx', 'bench/bare-ws-server.ts'],
    cwd: ROOT,
    env: { PORT: '0' },
    readyLine: READY_LINE,
  });
  const send = async (frame: string) => {
    const answer = await post(`${child.url}/send`, { 'content-type': 'application/json' }, frame);
    if (answer.status !== 200) throw new Error(`POST /send: HTTP ${answer.status} ${answer.text.slice(0, 300)}`);
    return (JSON.parse(answer.text) as { loopMs: number }).loopMs;
  };
  return {
    name: 'baseline',
    nodes: [child],
    // The same query length as the service's, so the handshakes are the same size.
    viewerUrls: [`${child.url.replace('http:', 'ws:')}/v1/ws?apiKey=svc_pk_${base62(32)}&contentId=${BROADCAST}`],
    welcomePrefix: '{"type":"welcome"',
    async prepare() {
      // Warms the keep-alive connection as the service's poll creation does (answered 404).
      const response = await request(`${child.url}/warm`);
      await response.body.dump();
      return '';
    },
    show: () => send(showFrame),
    hide: () => send(hideFrame),
    stop: () => child.stop(5_000),
  };
}

/** A frame of the same shape and size as the service's overlay.show, for when none was captured. */
export function syntheticShowFrame(): string {
  const at = new Date().toISOString();
  return JSON.stringify({
    type: 'overlay.show',
    overlay: { ...POLL, id: `ov_${base62(26)}`, broadcastId: BROADCAST, active: true, createdAt: at, updatedAt: at },
  });
}

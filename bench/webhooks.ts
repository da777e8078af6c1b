import { createServer, type IncomingMessage, type Server } from 'node:http';
import { loadavg } from 'node:os';
import { Pool, request } from 'undici';
import { Webhook } from 'standardwebhooks';
import { makeBody } from './events';
import { base62 } from './ingest';
import { percentile } from './load';
import { cpuSeconds, startService, tempFolder, type Child } from './processes';
import { fmt, type BenchTable, type Row } from './report';

export const TARGET_DELIVERIES_PER_SECOND = 5_000;
export const TARGET_P99_MS = 200;
export const DEFAULT_WEBHOOK_EVENTS = 60_000;
export const DEFAULT_WEBHOOK_RATE = 1_000;
/** Requests in flight in the baseline loop: what the dispatcher allows towards one endpoint. */
const BASELINE_CONCURRENCY = 8;
/** Connections the benchmark ingests over during the burst. */
const INGEST_CONNECTIONS = 64;
const LATENCY_SECONDS = 20;
/** The steady phase sends a batch this often. */
const LATENCY_TICK_MS = 10;

export interface WebhookOptions {
  /** Events ingested at once for the throughput phase. */
  events: number;
  /** Events per second in the latency phase. */
  rate: number;
  log: (line: string) => void;
}

/** A local receiver that verifies every delivery with the reference implementation and notes when each id first arrived. */
export class Receiver {
  readonly firstSeen = new Map<string, number>();
  duplicates = 0;
  invalid = 0;
  private verifier: Webhook | null = null;
  private server: Server | null = null;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => this.handle(req).then(() => res.writeHead(204).end(), () => res.writeHead(400).end()));
    this.server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const address = this.server.address() as { port: number };
    this.url = `http://127.0.0.1:${address.port}/hook`;
  }

  /** Secret of the endpoint whose deliveries are verified. */
  expect(secret: string): void {
    this.verifier = new Webhook(secret);
    this.firstSeen.clear();
    this.duplicates = 0;
    this.invalid = 0;
  }

  private async handle(req: IncomingMessage): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const at = performance.now();
    const id = String(req.headers['webhook-id']);
    if (this.verifier) {
      try {
        this.verifier.verify(Buffer.concat(chunks).toString('utf8'), {
          'webhook-id': id,
          'webhook-timestamp': String(req.headers['webhook-timestamp']),
          'webhook-signature': String(req.headers['webhook-signature']),
        });
      } catch {
        this.invalid++;
        throw new Error('invalid signature');
      }
    }
    if (this.firstSeen.has(id)) this.duplicates++;
    else this.firstSeen.set(id, at);
  }

  async waitFor(count: number, timeoutMs: number): Promise<boolean> {
    const deadline = performance.now() + timeoutMs;
    while (this.firstSeen.size < count && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    return this.firstSeen.size >= count;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}

/** Request bodies of 100 events with the ids they hold. */
function batches(count: number): { body: Buffer; ids: string[] }[] {
  return Array.from({ length: count }, () => {
    const body = makeBody();
    const ids = (JSON.parse(body.toString('utf8')) as { events: { eventId: string }[] }).events.map((e) => e.eventId);
    return { body, ids };
  });
}

async function post(pool: Pool, apiKey: string, body: Buffer): Promise<void> {
  const response = await pool.request({ method: 'POST', path: '/v1/events', headers: { 'content-type': 'application/json', 'x-svc-api-key': apiKey }, body });
  const text = await response.body.text();
  if (response.statusCode !== 200) throw new Error(`ingest answered ${response.statusCode}: ${text.slice(0, 300)}`);
  const answer = JSON.parse(text) as { accepted: number; rejected: unknown[] };
  if (answer.rejected.length) throw new Error(`ingest rejected events: ${text.slice(0, 300)}`);
}

export interface Phase {
  deliveries: number;
  seconds: number;
  cpuSeconds: number;
  duplicates: number;
  invalid: number;
  missing: number;
}

/** Baseline: the same bodies posted to the same receiver by a bare undici loop. */
async function baselineLoop(receiver: Receiver, bodies: string[]): Promise<Phase> {
  // Signed before the timed loop, so that the receiver verifies as much as for the service.
  const secret = `whsec_${Buffer.from(base62(32)).toString('base64')}`;
  const signer = new Webhook(secret);
  const now = new Date();
  const headers = bodies.map((body, i) => ({
    'content-type': 'application/json',
    'webhook-id': `base-${i}`,
    'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
    'webhook-signature': signer.sign(`base-${i}`, now, body),
  }));
  receiver.expect(secret);
  const origin = new URL(receiver.url);
  const pool = new Pool(origin.origin, { connections: BASELINE_CONCURRENCY });
  let next = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: BASELINE_CONCURRENCY }, async () => {
      while (next < bodies.length) {
        const i = next++;
        const response = await pool.request({ method: 'POST', path: origin.pathname, headers: headers[i], body: bodies[i] });
        await response.body.dump();
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  await pool.close();
  return { deliveries: receiver.firstSeen.size, seconds, cpuSeconds: (cpu.user + cpu.system) / 1e6, duplicates: receiver.duplicates, invalid: receiver.invalid, missing: bodies.length - receiver.firstSeen.size };
}

/** Throughput: a burst of events ingested as fast as possible; deliveries/s from the first receipt to the last. */
export async function burst(server: Child, apiKey: string, receiver: Receiver, secret: string, events: number, log: (line: string) => void): Promise<Phase & { ingestSeconds: number }> {
  receiver.expect(secret);
  const work = batches(Math.ceil(events / 100));
  const expected = work.length * 100;
  const pool = new Pool(server.url, { connections: INGEST_CONNECTIONS });
  const cpu0 = cpuSeconds(server.pid);
  const t0 = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: INGEST_CONNECTIONS }, async () => {
    while (next < work.length) await post(pool, apiKey, work[next++]!.body);
  }));
  const ingestSeconds = (performance.now() - t0) / 1000;
  log(`  ${fmt.int(expected)} events ingested in ${ingestSeconds.toFixed(1)} s; ${fmt.int(receiver.firstSeen.size)} delivered so far`);
  await receiver.waitFor(expected, 180_000);
  const cpu = cpuSeconds(server.pid) - cpu0;
  await pool.close();
  const times = [...receiver.firstSeen.values()];
  const first = Math.min(...times);
  const last = Math.max(...times);
  return {
    deliveries: receiver.firstSeen.size,
    seconds: (last - first) / 1000,
    cpuSeconds: cpu,
    duplicates: receiver.duplicates,
    invalid: receiver.invalid,
    missing: expected - receiver.firstSeen.size,
    ingestSeconds,
  };
}

interface LatencyPhase {
  /** Receipt − ingest acknowledgement per event, ms, sorted. */
  latencies: Float64Array;
  sent: number;
  missing: number;
  duplicates: number;
  invalid: number;
  cpuSeconds: number;
  seconds: number;
}

/** Latency: a steady `rate` events/s; per event, the time from the ingest answer to the receiver's first receipt. */
async function steady(server: Child, apiKey: string, receiver: Receiver, secret: string, rate: number): Promise<LatencyPhase> {
  receiver.expect(secret);
  const perTick = Math.max(1, Math.round((rate * LATENCY_TICK_MS) / 1000));
  const ticks = Math.round((LATENCY_SECONDS * 1000) / LATENCY_TICK_MS);
  // Bodies of `perTick` events: the first events of full batches.
  const work = batches(ticks).map(({ body, ids }) => {
    const parsed = JSON.parse(body.toString('utf8')) as { sentAt: string; events: unknown[] };
    return { body: Buffer.from(JSON.stringify({ sentAt: parsed.sentAt, events: parsed.events.slice(0, perTick) })), ids: ids.slice(0, perTick) };
  });
  const acked = new Map<string, number>();
  const pool = new Pool(server.url, { connections: 16 });
  const cpu0 = cpuSeconds(server.pid);
  const t0 = performance.now();
  const inFlight: Promise<void>[] = [];
  for (let tick = 0; tick < ticks; tick++) {
    const due = t0 + tick * LATENCY_TICK_MS;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const { body, ids } = work[tick]!;
    // Timestamps are re-stamped to now so that no event is refused as too old or from the future.
    const now = new Date().toISOString();
    const fresh = Buffer.from(body.toString('utf8').replace(/"(timestamp|sentAt)":"[^"]+"/g, `"$1":"${now}"`));
    inFlight.push(post(pool, apiKey, fresh).then(() => {
      const at = performance.now();
      for (const id of ids) acked.set(id, at);
    }));
  }
  await Promise.all(inFlight);
  const seconds = (performance.now() - t0) / 1000;
  const sent = ticks * perTick;
  await receiver.waitFor(sent, 60_000);
  const cpu = cpuSeconds(server.pid) - cpu0;
  await pool.close();
  const latencies: number[] = [];
  for (const [id, at] of acked) {
    const seen = receiver.firstSeen.get(id);
    if (seen !== undefined) latencies.push(seen - at);
  }
  return {
    latencies: Float64Array.from(latencies).sort(),
    sent,
    missing: sent - receiver.firstSeen.size,
    duplicates: receiver.duplicates,
    invalid: receiver.invalid,
    cpuSeconds: cpu,
    seconds,
  };
}

export async function createEndpoint(server: Child, adminToken: string, url: string): Promise<string> {
  const response = await request(`${server.url}/v1/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url, description: 'benchmark receiver' }),
  });
  const body = (await response.body.json()) as { secret?: string };
  if (response.statusCode !== 201 || !body.secret) throw new Error(`creating the endpoint failed: ${response.statusCode} ${JSON.stringify(body)}`);
  return body.secret;
}

/**
 * Webhook delivery: deliveries per second to a local receiver after a burst of ingested
 * events, and the time from ingest acknowledgement to receipt at a steady rate, next to a bare
 * undici loop posting the same bodies to the same receiver.
 */
export async function webhookBenchmark(options: WebhookOptions): Promise<BenchTable> {
  const log = options.log;
  const loadBefore = loadavg()[0]!;
  const receiver = new Receiver();
  await receiver.start();
  const throughputFolder = tempFolder('svc-bench-webhooks-');
  const latencyFolder = tempFolder('svc-bench-webhooks-');
  const credentials = { SVC_BOOTSTRAP_API_KEY: `svc_pk_${base62(32)}`, SVC_BOOTSTRAP_ADMIN_TOKEN: `svc_sk_${base62(32)}`, SVC_WEBHOOK_ALLOW_PRIVATE: 'true' };
  try {
    log('throughput: the service with one endpoint, a burst of events…');
    let service = await startService(throughputFolder.path, credentials);
    let sample: string[] = [];
    let throughput: Phase & { ingestSeconds: number };
    try {
      const secret = await createEndpoint(service, credentials.SVC_BOOTSTRAP_ADMIN_TOKEN, receiver.url);
      throughput = await burst(service, credentials.SVC_BOOTSTRAP_API_KEY, receiver, secret, options.events, log);
      log(`  ${fmt.int(throughput.deliveries / throughput.seconds)} deliveries/s (${fmt.int(throughput.deliveries)} in ${throughput.seconds.toFixed(1)} s)`);
      // The exact bodies it delivered, for the baseline.
      const exported = await request(`${service.url}/v1/analytics/events?format=ndjson`, { headers: { authorization: `Bearer ${credentials.SVC_BOOTSTRAP_ADMIN_TOKEN}` } });
      sample = (await exported.body.text()).split('\n').filter(Boolean);
    } finally {
      await service.stop();
    }
    log('baseline: a bare undici loop posting the same bodies…');
    const baseline = await baselineLoop(receiver, sample);
    log(`  ${fmt.int(baseline.deliveries / baseline.seconds)} posts/s`);

    log(`latency: a fresh service, ${fmt.int(options.rate)} events/s for ${LATENCY_SECONDS} s…`);
    service = await startService(latencyFolder.path, credentials);
    let latency: LatencyPhase;
    try {
      const secret = await createEndpoint(service, credentials.SVC_BOOTSTRAP_ADMIN_TOKEN, receiver.url);
      latency = await steady(service, credentials.SVC_BOOTSTRAP_API_KEY, receiver, secret, options.rate);
      log(`  p50 ${fmt.ms(percentile(latency.latencies, 50))} ms, p99 ${fmt.ms(percentile(latency.latencies, 99))} ms over ${fmt.int(latency.latencies.length)} events`);
    } finally {
      await service.stop();
    }

    const rate = throughput.deliveries / throughput.seconds;
    const baseRate = baseline.deliveries / baseline.seconds;
    const p50 = percentile(latency.latencies, 50);
    const p99 = percentile(latency.latencies, 99);
    const errors = throughput.missing + throughput.invalid + latency.missing + latency.invalid + baseline.missing;
    const rows: Row[] = [
      { figure: 'deliveries/s to one local endpoint after a burst of events (first to last receipt; baseline: bare undici loop, same bodies, same receiver)', value: fmt.int(rate), baseline: fmt.int(baseRate), ratio: fmt.ratio(rate, baseRate), target: `≥ ${fmt.int(TARGET_DELIVERIES_PER_SECOND)}`, verdict: rate >= TARGET_DELIVERIES_PER_SECOND ? 'pass' : 'fail' },
      { figure: `ingest acknowledgement → receipt, p50 ms, at ${fmt.int(options.rate)} events/s`, value: fmt.ms(p50), baseline: '—', ratio: '—', target: '—', verdict: '—' },
      { figure: `ingest acknowledgement → receipt, p99 ms, at ${fmt.int(options.rate)} events/s`, value: fmt.ms(p99), baseline: '—', ratio: '—', target: `< ${TARGET_P99_MS}`, verdict: p99 < TARGET_P99_MS ? 'pass' : 'fail' },
      { figure: 'service CPU per delivered event, µs (burst: ingest and delivery)', value: ((throughput.cpuSeconds / throughput.deliveries) * 1e6).toFixed(1), baseline: ((baseline.cpuSeconds / baseline.deliveries) * 1e6).toFixed(1), ratio: '—', target: '—', verdict: '—' },
      { figure: 'errors: events not delivered, signatures the receiver refused', value: fmt.int(errors), baseline: fmt.int(baseline.missing), ratio: '—', target: '0', verdict: errors === 0 ? 'pass' : 'fail' },
    ];
    return {
      title: 'Webhook delivery: one local endpoint, Standard Webhooks signatures verified by the receiver',
      rows,
      runErrors: errors > 0,
      notes: [
        `Receiver: node:http on 127.0.0.1 in the benchmark process, verifying every delivery with the standardwebhooks package and answering 204; at-least-once repeats are counted, not errors (burst ${fmt.int(throughput.duplicates)}, steady ${fmt.int(latency.duplicates)}).`,
        `Burst: ${fmt.int(throughput.deliveries)} events POSTed in batches of 100 over ${INGEST_CONNECTIONS} connections (ingest took ${throughput.ingestSeconds.toFixed(1)} s), delivered in ${throughput.seconds.toFixed(1)} s from the first receipt to the last; the service used ${throughput.cpuSeconds.toFixed(1)} s of CPU meanwhile.`,
        `Baseline: an undici Pool of ${BASELINE_CONCURRENCY} connections (what the dispatcher allows to one endpoint) POSTing the ${fmt.int(sample.length)} exported event bodies, signed beforehand, to the same receiver: ${fmt.int(baseline.deliveries)} in ${baseline.seconds.toFixed(1)} s; the benchmark process (loop and receiver) used ${baseline.cpuSeconds.toFixed(1)} s of CPU.`,
        `Steady: ${fmt.int(latency.sent)} events in ${latency.seconds.toFixed(1)} s (a batch every ${LATENCY_TICK_MS} ms), each timed from its ingest request's answer to its first receipt; ${fmt.int(latency.latencies.length)} matched; min ${fmt.ms(latency.latencies[0] ?? 0)} ms, max ${fmt.ms(latency.latencies[latency.latencies.length - 1] ?? 0)} ms (a receipt before the answer is negative).`,
        `Load average before the run: ${loadBefore.toFixed(1)}.`,
      ],
    };
  } finally {
    await receiver.stop();
    throughputFolder.remove();
    latencyFolder.remove();
  }
}

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, seededRandom } from '@svc/protocol';
import { RequestFactory } from './fuzz/fuzz-requests';
import { Picker } from './fuzz/hostile-inputs';
import { mediaType } from './openapi/contract-checker';
import { describeAnswer, openContract, STATE_CHANGING, type ContractContext } from './openapi/contract-context';
import { startTestApp } from './test-app';

/** Hostile requests per operation from the fuzzer's factory; the seed keeps runs repeatable. */
const FUZZ_REQUESTS_PER_OPERATION = 30;
const FUZZ_SEED = 20_261_125;
const UNKNOWN_TOKEN = `svc_sk_${'0'.repeat(32)}`;
/** Statuses of a request refused for its URL (400, 414) or its body (400, 413, 415) before its method counts. */
const REFUSED_BEFORE_METHOD = new Set([400, 405, 413, 414, 415]);

/**
 * Every answer checked against the OpenAPI document: its status is listed for the operation, its
 * content type for that status, and a JSON body matches the schema. The behaviour that awaits the
 * HTTP changes is in openapi-contract-http-changes.test.ts.
 */
describe('the service answers as its OpenAPI document says', () => {
  let c: ContractContext;
  beforeAll(async () => {
    c = await openContract();
  });
  afterAll(() => c?.close());

  it('has a valid sample for every documented operation', () => {
    const sampled = new Set([...c.samples.map(([key]) => key), 'GET /v1/analytics/live']);
    expect(c.ops.map((op) => op.key).filter((key) => !sampled.has(key))).toEqual([]);
    expect([...sampled].filter((key) => !c.ops.some((op) => op.key === key))).toEqual([]);
  });

  it('answers every valid sample with its documented success status, content type and body', async () => {
    const failures: string[] = [];
    for (const [key, sample] of c.samples) {
      const op = c.ops.find((o) => o.key === key)!;
      if (sample.body === undefined && op.operation.requestBody?.required) failures.push(`${key}: the document requires a body that the service does not`);
      if (sample.body !== undefined) failures.push(...c.checker.requestViolations(op.operation, 'application/json', sample.body).map((v) => `${key} sample: ${v}`));
      const headers = { ...(sample.headers ?? c.admin()), ...(sample.body === undefined ? {} : { 'content-type': 'application/json' }) };
      const response = await c.send(sample.method, sample.url, headers, sample.body === undefined ? undefined : JSON.stringify(sample.body));
      if (response.statusCode !== sample.status) failures.push(describeAnswer(`${key} ${sample.url}: expected ${sample.status}`, response));
      failures.push(...c.check(op, sample.url, response));
    }
    expect(failures).toEqual([]);
  });

  it('streams the live analytics as a documented text/event-stream', async () => {
    const op = c.ops.find((o) => o.key === 'GET /v1/analytics/live')!;
    const abort = new AbortController();
    const response = await fetch(`${c.t.url}/v1/analytics/live?campaignId=${c.fixture.campaignId}&from=2026-01-01`, { headers: c.admin(), signal: abort.signal });
    const reader = response.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    abort.abort();
    expect(response.status).toBe(200);
    expect(Object.keys(op.operation.responses['200']!.content!)).toContain(mediaType(response.headers.get('content-type')));
    expect(first).toMatch(/^event: overview\ndata: \{/);
  });

  it('answers missing, unknown and insufficient credentials as documented', async () => {
    const failures: string[] = [];
    for (const op of c.ops.filter((o) => o.operation.security?.length)) {
      const url = c.sampleUrl(op);
      for (const [what, headers] of [
        ['no credential', {}],
        ['an unknown admin token', { authorization: `Bearer ${UNKNOWN_TOKEN}` }],
        ['a malformed Authorization header', { authorization: 'Basic YTpi' }],
        ['an unknown API key', { 'x-svc-api-key': `svc_pk_${'0'.repeat(32)}` }],
      ] as const) {
        const response = await c.send(op.method, url, headers);
        if (response.statusCode < 400 || response.statusCode >= 500) failures.push(describeAnswer(`${op.key} with ${what}`, response));
        failures.push(...c.check(op, `with ${what}`, response));
      }
    }
    expect(failures).toEqual([]);
  });

  it('answers unknown, malformed and over-long path parameters as documented', async () => {
    const failures: string[] = [];
    for (const op of c.ops) {
      for (const parameter of op.operation.parameters?.filter((p) => p.in === 'path') ?? []) {
        const unknown = parameter.schema.type === 'integer' ? '987654321' : 'no-such-id-9';
        for (const value of [unknown, '%E0%A4%A', '%00', 'x'.repeat(2_000), '-1', '1.5']) {
          const url = c.withSegment(c.sampleUrl(op), op, parameter.name, value);
          const response = await c.send(op.method, url, c.admin());
          if (response.statusCode >= 500) failures.push(describeAnswer(`${op.key} ${parameter.name}=${value.slice(0, 20)}`, response));
          failures.push(...c.check(op, `${parameter.name}=${value.slice(0, 20)}`, response));
        }
      }
    }
    expect(failures).toEqual([]);
  });

  it('answers broken, foreign and oversized bodies as documented', async () => {
    const failures: string[] = [];
    const bodies: Array<[string, string, string | Buffer]> = [
      ['broken JSON', 'application/json', '{"name": '],
      ['XML', 'application/xml', '<name>x</name>'],
      ['a form', 'application/x-www-form-urlencoded', 'name=x'],
      ['1.1 MB of JSON', 'application/json', JSON.stringify({ name: 'x'.repeat(1_100_000) })],
    ];
    for (const op of c.ops.filter((o) => STATE_CHANGING.has(o.method))) {
      const credential = c.credentialOf(op);
      const cases = op.operation.requestBody ? [...bodies, ['a JSON array', 'application/json', '[]'] as [string, string, string]] : bodies;
      for (const [what, type, payload] of cases) {
        const response = await c.send(op.method, c.sampleUrl(op), { ...credential, 'content-type': type }, payload);
        if (response.statusCode < 400 || response.statusCode >= 500) failures.push(describeAnswer(`${op.key} with ${what}`, response));
        failures.push(...c.check(op, `with ${what}`, response));
      }
    }
    expect(failures).toEqual([]);
  });

  it('answers query parameters of the wrong type, value or name as documented', async () => {
    const failures: string[] = [];
    for (const op of c.ops) {
      const query = op.operation.parameters?.filter((p) => p.in === 'query') ?? [];
      if (!query.length || op.path === '/v1/analytics/live') continue;
      const credential = c.credentialOf(op);
      for (const parameter of query) {
        const { type, maxLength, enum: values } = parameter.schema as { type: string; maxLength?: number; enum?: unknown[] };
        const bad = type === 'integer' ? ['abc', '0', '1.5', '99999999999999999999'] : type === 'array' || values ? ['nope', ''] : maxLength ? ['x'.repeat(maxLength + 1)] : [];
        for (const value of [...bad, '%zz']) {
          const response = await c.send(op.method, `${c.sampleUrl(op)}?${parameter.name}=${value}`, credential);
          if (value !== '%zz' && response.statusCode !== 400) failures.push(describeAnswer(`${op.key} ${parameter.name}=${value}`, response));
          failures.push(...c.check(op, `${parameter.name}=${value}`, response));
        }
      }
      // The analytics routes refuse unknown parameters, the export ignores them (documented either way).
      const repeated = `${c.sampleUrl(op)}?${query[0]!.name}=1&${query[0]!.name}=2&colour=red`;
      failures.push(...c.check(op, repeated, await c.send(op.method, repeated, credential)));
    }
    expect(failures).toEqual([]);
  });

  // Last among the tests of this app: hostile requests may delete or change the c.fixture.
  it(`answers ${FUZZ_REQUESTS_PER_OPERATION} hostile requests per operation from the fuzzer as documented`, async () => {
    const login = await c.t.app.inject({ method: 'POST', url: '/v1/session', payload: { token: c.fixture.adminToken } });
    const credentials = { adminToken: c.fixture.adminToken, apiKey: c.fixture.apiKey, sessionCookie: String(login.headers['set-cookie']).split(';')[0]! };
    const ids = { campaigns: String(c.fixture.campaignId), sponsors: c.fixture.sponsorId, broadcasts: c.fixture.broadcastId, overlayId: c.fixture.overlayId, 'api-keys': c.fixture.apiKeyId, webhooks: c.fixture.webhookId, deliveryId: c.fixture.deliveryId, deletions: c.fixture.deletionId, userId: 'contract-user' };
    const picker = new Picker(seededRandom(FUZZ_SEED));
    const findings = new Map<string, string>();
    let checked = 0;
    for (const op of c.ops) {
      const factory = new RequestFactory(picker, [{ method: op.method, path: op.path }], credentials, ids);
      for (let i = 0; i < FUZZ_REQUESTS_PER_OPERATION; i++) {
        const request = factory.next({ allowStreaming: false });
        // HEAD mirrors GET without a body and OPTIONS is CORS; neither is an operation of the document.
        if (request.method === 'HEAD' || request.method === 'OPTIONS') continue;
        const located = c.checker.locate(request.method, request.url);
        if (!located) continue;
        const response = await c.send(request.method, request.url, request.headers, request.body);
        const what = `${request.method} ${request.url.slice(0, 100)}`;
        if (!located.operation) {
          // Another method on a documented path: 405, unless the URL or the body was refused first.
          const refused = REFUSED_BEFORE_METHOD.has(response.statusCode) && mediaType(response.headers['content-type']) === 'application/problem+json';
          if (!refused) findings.set(`${request.method} ${located.path}: ${response.statusCode}, not 405`, describeAnswer(what, response));
          continue;
        }
        checked++;
        const op = c.ops.find((o) => o.key === `${request.method} ${located.path}`)!;
        for (const violation of c.check(op, '', response)) findings.set(violation, describeAnswer(what, response));
      }
    }
    expect([...findings].map(([finding, example]) => `${finding}\n    e.g. ${example}`)).toEqual([]);
    expect(checked).toBeGreaterThan(c.ops.length * FUZZ_REQUESTS_PER_OPERATION * 0.5);
  });

  it('answers over the rate limits with a documented 429 on every guarded operation', async () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 25));
    const limited = await startTestApp({ clock, config: { logLevel: 'fatal', rateLimit: { perKeyPerSecond: 1, perIpPerSecond: 1, burstSeconds: 1 } } });
    try {
      const failures: string[] = [];
      for (const op of c.ops) {
        const url = op.path.replace(/\{\w+\}/g, 'x1');
        const statuses = new Set<number>();
        // An open live stream never ends: that route only gets calls that are refused.
        const credentials = op.path === '/v1/analytics/live' ? [{}, {}, {}] : [{}, {}, { authorization: `Bearer ${limited.demo.adminToken}` }, { authorization: `Bearer ${limited.demo.adminToken}` }];
        for (const headers of credentials) {
          const response = await limited.app.inject({ method: op.method, url, headers });
          statuses.add(response.statusCode);
          const documented = Object.keys(op.operation.responses[String(response.statusCode)]?.headers ?? {});
          const missing = response.statusCode === 429 ? documented.filter((name) => response.headers[name] === undefined) : [];
          if (missing.length) failures.push(`${op.key}: 429 without ${missing.join(', ')}`);
          failures.push(...c.check(op, `over the limit with ${Object.keys(headers).join() || 'no credential'}`, response));
        }
        if (op.operation.security?.length && !statuses.has(429)) failures.push(`${op.key}: no 429 among ${[...statuses].join(', ')}`);
      }
      expect(failures).toEqual([]);
    } finally {
      await limited.close();
    }
  });
});

import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, seededRandom } from '@svc/protocol';
import { RequestFactory, type Method } from './fuzz/fuzz-requests';
import { Picker } from './fuzz/hostile-inputs';
import { ContractChecker, mediaType, type OpenApiDocument, type OpenApiOperation } from './openapi/contract-checker';
import { AWAITING_BEHAVIOUR, createFixture, validSamples, type Fixture, type Sample } from './openapi/contract-samples';
import { startTestApp, type TestApp } from './test-app';

/** Hostile requests per operation from the fuzzer's factory; the seed keeps runs repeatable. */
const FUZZ_REQUESTS_PER_OPERATION = 30;
const FUZZ_SEED = 20_261_125;
const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const ALL_METHODS: Method[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
const UNKNOWN_TOKEN = `svc_sk_${'0'.repeat(32)}`;
/** Statuses of a request refused for its URL (400, 414) or its body (400, 413, 415) before its method counts. */
const REFUSED_BEFORE_METHOD = new Set([400, 405, 413, 414, 415]);

/** A test that awaits behaviour of the HTTP changes (see AWAITING_BEHAVIOUR) must fail until they land. */
const awaiting = (key: string) => (AWAITING_BEHAVIOUR.has(key) ? it.fails : it);

interface Op {
  key: string;
  method: Method;
  path: string;
  operation: OpenApiOperation;
}

describe('the service answers as its OpenAPI document says', () => {
  let t: TestApp;
  let doc: OpenApiDocument;
  let checker: ContractChecker;
  let fixture: Fixture;
  let samples: Array<[string, Sample]>;
  let ops: Op[];
  const admin = () => ({ authorization: `Bearer ${fixture.adminToken}` });

  /** The URL of the operation's first valid sample: real ids in every path parameter. */
  const sampleUrl = (op: Op) => samples.find(([key]) => key === op.key)?.[1].url.split('?')[0] ?? op.path.replace(/\{\w+\}/g, 'x1');
  const withSegment = (url: string, op: Op, name: string, value: string) => {
    const index = op.path.split('/').indexOf(`{${name}}`);
    return url.split('/').map((segment, i) => (i === index ? value : segment)).join('/');
  };
  const send = (method: string, url: string, headers: Record<string, string>, payload?: string | Buffer) =>
    t.app.inject({ method: method as Method, url, headers, ...(payload === undefined ? {} : { payload }) });
  const describeAnswer = (what: string, response: LightMyRequestResponse) => `${what} → ${response.statusCode} ${response.body.slice(0, 160)}`;

  /** Violations of the document by one answer, each with the request that got it. */
  const check = (op: Op, what: string, response: LightMyRequestResponse): string[] =>
    checker.violations(op.operation, { status: response.statusCode, headers: response.headers, body: response.body }).map((v) => `${op.key} ${what}: ${v}`);

  beforeAll(async () => {
    t = await startTestApp({ listen: true, config: { webhookAllowPrivate: true, logLevel: 'fatal' } });
    doc = (await t.app.inject({ url: '/v1/openapi.json' })).json() as OpenApiDocument;
    checker = new ContractChecker(doc);
    ops = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({ key: `${method.toUpperCase()} ${path}`, method: method.toUpperCase() as Method, path, operation })),
    );
    fixture = await createFixture(t.app, t.demo.adminToken, t.demo.apiKey);
    samples = validSamples(fixture);
  });
  afterAll(() => t?.close());

  it('has a valid sample for every documented operation', () => {
    const sampled = new Set([...samples.map(([key]) => key), 'GET /v1/analytics/live']);
    expect(ops.map((op) => op.key).filter((key) => !sampled.has(key))).toEqual([]);
    expect([...sampled].filter((key) => !ops.some((op) => op.key === key))).toEqual([]);
  });

  it('answers every valid sample with its documented success status, content type and body', async () => {
    const failures: string[] = [];
    for (const [key, sample] of samples) {
      const op = ops.find((o) => o.key === key)!;
      if (sample.body === undefined && op.operation.requestBody?.required) failures.push(`${key}: the document requires a body that the service does not`);
      if (sample.body !== undefined) failures.push(...checker.requestViolations(op.operation, 'application/json', sample.body).map((v) => `${key} sample: ${v}`));
      const headers = { ...(sample.headers ?? admin()), ...(sample.body === undefined ? {} : { 'content-type': 'application/json' }) };
      const response = await send(sample.method, sample.url, headers, sample.body === undefined ? undefined : JSON.stringify(sample.body));
      if (response.statusCode !== sample.status) failures.push(describeAnswer(`${key} ${sample.url}: expected ${sample.status}`, response));
      failures.push(...check(op, sample.url, response));
    }
    expect(failures).toEqual([]);
  });

  it('streams the live analytics as a documented text/event-stream', async () => {
    const op = ops.find((o) => o.key === 'GET /v1/analytics/live')!;
    const abort = new AbortController();
    const response = await fetch(`${t.url}/v1/analytics/live?campaignId=${fixture.campaignId}&from=2026-01-01`, { headers: admin(), signal: abort.signal });
    const reader = response.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    abort.abort();
    expect(response.status).toBe(200);
    expect(Object.keys(op.operation.responses['200']!.content!)).toContain(mediaType(response.headers.get('content-type')));
    expect(first).toMatch(/^event: overview\ndata: \{/);
  });

  it('answers missing, unknown and insufficient credentials as documented', async () => {
    const failures: string[] = [];
    for (const op of ops.filter((o) => o.operation.security?.length)) {
      const url = sampleUrl(op);
      for (const [what, headers] of [
        ['no credential', {}],
        ['an unknown admin token', { authorization: `Bearer ${UNKNOWN_TOKEN}` }],
        ['a malformed Authorization header', { authorization: 'Basic YTpi' }],
        ['an unknown API key', { 'x-svc-api-key': `svc_pk_${'0'.repeat(32)}` }],
      ] as const) {
        const response = await send(op.method, url, headers);
        if (response.statusCode < 400 || response.statusCode >= 500) failures.push(describeAnswer(`${op.key} with ${what}`, response));
        failures.push(...check(op, `with ${what}`, response));
      }
    }
    expect(failures).toEqual([]);
  });

  it('answers unknown, malformed and over-long path parameters as documented', async () => {
    const failures: string[] = [];
    for (const op of ops) {
      for (const parameter of op.operation.parameters?.filter((p) => p.in === 'path') ?? []) {
        const unknown = parameter.schema.type === 'integer' ? '987654321' : 'no-such-id-9';
        for (const value of [unknown, '%E0%A4%A', '%00', 'x'.repeat(2_000), '-1', '1.5']) {
          const url = withSegment(sampleUrl(op), op, parameter.name, value);
          const response = await send(op.method, url, admin());
          if (response.statusCode >= 500) failures.push(describeAnswer(`${op.key} ${parameter.name}=${value.slice(0, 20)}`, response));
          failures.push(...check(op, `${parameter.name}=${value.slice(0, 20)}`, response));
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
    for (const op of ops.filter((o) => STATE_CHANGING.has(o.method))) {
      const credential = samples.find(([key]) => key === op.key)?.[1].headers ?? admin();
      const cases = op.operation.requestBody ? [...bodies, ['a JSON array', 'application/json', '[]'] as [string, string, string]] : bodies;
      for (const [what, type, payload] of cases) {
        const response = await send(op.method, sampleUrl(op), { ...credential, 'content-type': type }, payload);
        if (response.statusCode < 400 || response.statusCode >= 500) failures.push(describeAnswer(`${op.key} with ${what}`, response));
        failures.push(...check(op, `with ${what}`, response));
      }
    }
    expect(failures).toEqual([]);
  });

  it('answers query parameters of the wrong type, value or name as documented', async () => {
    const failures: string[] = [];
    for (const op of ops) {
      const query = op.operation.parameters?.filter((p) => p.in === 'query') ?? [];
      if (!query.length || op.path === '/v1/analytics/live') continue;
      const credential = samples.find(([key]) => key === op.key)?.[1].headers ?? admin();
      for (const parameter of query) {
        const { type, maxLength, enum: values } = parameter.schema as { type: string; maxLength?: number; enum?: unknown[] };
        const bad = type === 'integer' ? ['abc', '0', '1.5', '99999999999999999999'] : type === 'array' || values ? ['nope', ''] : maxLength ? ['x'.repeat(maxLength + 1)] : [];
        for (const value of [...bad, '%zz']) {
          const response = await send(op.method, `${sampleUrl(op)}?${parameter.name}=${value}`, credential);
          if (value !== '%zz' && response.statusCode !== 400) failures.push(describeAnswer(`${op.key} ${parameter.name}=${value}`, response));
          failures.push(...check(op, `${parameter.name}=${value}`, response));
        }
      }
      // The analytics routes refuse unknown parameters, the export ignores them (documented either way).
      const repeated = `${sampleUrl(op)}?${query[0]!.name}=1&${query[0]!.name}=2&colour=red`;
      failures.push(...check(op, repeated, await send(op.method, repeated, credential)));
    }
    expect(failures).toEqual([]);
  });

  awaiting('405-allow')('answers an undocumented method on a documented path with 405 and Allow', async () => {
    const failures: string[] = [];
    for (const [path, methods] of Object.entries(doc.paths)) {
      const allowed = Object.keys(methods).map((m) => m.toUpperCase());
      const op = ops.find((o) => o.path === path)!;
      for (const method of ALL_METHODS.filter((m) => !allowed.includes(m))) {
        const response = await send(method, sampleUrl(op), admin());
        const allow = String(response.headers.allow ?? '').split(',').map((m) => m.trim());
        const problem = mediaType(response.headers['content-type']) === 'application/problem+json';
        if (response.statusCode !== 405 || !problem || !allowed.every((m) => allow.includes(m))) failures.push(describeAnswer(`${method} ${path} (Allow: ${allow.join(', ')})`, response));
      }
    }
    expect(failures).toEqual([]);
  });

  awaiting('max-length-ids')('answers path parameters of the documented maximum length normally, not 414', async () => {
    const failures: string[] = [];
    for (const op of ops) {
      for (const parameter of op.operation.parameters?.filter((p) => p.in === 'path' && typeof p.schema.maxLength === 'number') ?? []) {
        const url = withSegment(sampleUrl(op), op, parameter.name, 'a'.repeat(parameter.schema.maxLength as number));
        const response = await send(op.method, url, admin());
        if (response.statusCode === 414 || response.statusCode >= 500) failures.push(describeAnswer(`${op.key} ${parameter.name} of ${String(parameter.schema.maxLength)} characters`, response));
        failures.push(...check(op, `${parameter.name} of the maximum length`, response));
      }
    }
    expect(failures).toEqual([]);
  });

  awaiting('cookie-origin')('refuses state-changing calls authenticated by the session cookie from another origin with 403', async () => {
    const login = await t.app.inject({ method: 'POST', url: '/v1/session', payload: { token: fixture.adminToken } });
    const cookie = String(login.headers['set-cookie']).split(';')[0]!;
    const failures: string[] = [];
    const dashboard = new URL(t.services.config.publicUrl);
    for (const op of ops.filter((o) => STATE_CHANGING.has(o.method) && Object.keys(o.operation.responses).includes('403'))) {
      // Unknown ids (a call that got through would change nothing) and the sample's valid body.
      const url = sampleUrl(op).split('/').map((segment, i) => (op.path.split('/')[i]?.startsWith('{') ? '987654321' : segment)).join('/');
      const body = samples.find(([key]) => key === op.key)?.[1].body;
      const json: Record<string, string> = body === undefined ? {} : { 'content-type': 'application/json' };
      const payload = body === undefined ? undefined : JSON.stringify(body);
      for (const origin of [undefined, 'http://localhost:9999', 'https://evil.example', 'null']) {
        const response = await send(op.method, url, { cookie, host: dashboard.host, ...json, ...(origin ? { origin } : {}) }, payload);
        if (response.statusCode !== 403) failures.push(describeAnswer(`${op.key} with the cookie from ${origin ?? 'no origin'}`, response));
        failures.push(...check(op, 'cookie from another origin', response));
      }
      const own = await send(op.method, url, { cookie, host: dashboard.host, origin: dashboard.origin, 'sec-fetch-site': 'same-origin', ...json }, payload);
      if (own.statusCode === 403 || own.statusCode === 401) failures.push(describeAnswer(`${op.key} with the cookie from the dashboard's origin`, own));
      failures.push(...check(op, "cookie from the dashboard's origin", own));
    }
    expect(failures).toEqual([]);
  });

  awaiting('empty-json-body')('takes an empty body sent as application/json as no body', async () => {
    const failures: string[] = [];
    for (const op of ops.filter((o) => STATE_CHANGING.has(o.method) && !o.operation.requestBody)) {
      const credential = samples.find(([key]) => key === op.key)?.[1].headers ?? admin();
      const response = await send(op.method, sampleUrl(op), { ...credential, 'content-type': 'application/json' }, '');
      if (response.statusCode === 400) failures.push(describeAnswer(`${op.key} with an empty application/json body`, response));
      failures.push(...check(op, 'empty JSON body', response));
    }
    expect(failures).toEqual([]);
  });

  awaiting('no-coercion')('refuses body values of another type than documented instead of converting them', async () => {
    const failures: string[] = [];
    const cases: Array<[string, string, string, object]> = [
      ['POST /v1/broadcasts', 'POST', '/v1/broadcasts', { id: false, campaignId: fixture.campaignId }],
      ['POST /v1/campaigns', 'POST', '/v1/campaigns', { name: 12 }],
      ['PATCH /v1/settings', 'PATCH', '/v1/settings', { featureFlags: { polls: 0 } }],
      ['PATCH /v1/webhooks/{id}', 'PATCH', `/v1/webhooks/${fixture.webhookId}`, { enabled: 'true' }],
    ];
    for (const [key, method, url, body] of cases) {
      const op = ops.find((o) => o.key === key)!;
      expect(checker.requestViolations(op.operation, 'application/json', body), `${key} ${JSON.stringify(body)} is valid per the document`).not.toEqual([]);
      const response = await send(method, url, { ...admin(), 'content-type': 'application/json' }, JSON.stringify(body));
      if (response.statusCode !== 400) failures.push(describeAnswer(`${key} ${JSON.stringify(body)}`, response));
      failures.push(...check(op, JSON.stringify(body), response));
    }
    expect(failures).toEqual([]);
  });

  // Last among the tests of this app: hostile requests may delete or change the fixture.
  it(`answers ${FUZZ_REQUESTS_PER_OPERATION} hostile requests per operation from the fuzzer as documented`, async () => {
    const login = await t.app.inject({ method: 'POST', url: '/v1/session', payload: { token: fixture.adminToken } });
    const credentials = { adminToken: fixture.adminToken, apiKey: fixture.apiKey, sessionCookie: String(login.headers['set-cookie']).split(';')[0]! };
    const ids = { campaigns: String(fixture.campaignId), sponsors: fixture.sponsorId, broadcasts: fixture.broadcastId, overlayId: fixture.overlayId, 'api-keys': fixture.apiKeyId, webhooks: fixture.webhookId, deliveryId: fixture.deliveryId, deletions: fixture.deletionId, userId: 'contract-user' };
    const picker = new Picker(seededRandom(FUZZ_SEED));
    const findings = new Map<string, string>();
    let checked = 0;
    for (const op of ops) {
      const factory = new RequestFactory(picker, [{ method: op.method, path: op.path }], credentials, ids);
      for (let i = 0; i < FUZZ_REQUESTS_PER_OPERATION; i++) {
        const request = factory.next({ allowStreaming: false });
        // HEAD mirrors GET without a body and OPTIONS is CORS; neither is an operation of the document.
        if (request.method === 'HEAD' || request.method === 'OPTIONS') continue;
        const located = checker.locate(request.method, request.url);
        if (!located) continue;
        const response = await send(request.method, request.url, request.headers, request.body);
        const what = `${request.method} ${request.url.slice(0, 100)}`;
        if (!located.operation) {
          // Another method on a documented path: 405, unless the URL or the body was refused first.
          const refused = REFUSED_BEFORE_METHOD.has(response.statusCode) && mediaType(response.headers['content-type']) === 'application/problem+json';
          if (!AWAITING_BEHAVIOUR.has('405-allow') && !refused) findings.set(`${request.method} ${located.path}: ${response.statusCode}, not 405`, describeAnswer(what, response));
          continue;
        }
        checked++;
        const op = ops.find((o) => o.key === `${request.method} ${located.path}`)!;
        for (const violation of check(op, '', response)) findings.set(violation, describeAnswer(what, response));
      }
    }
    expect([...findings].map(([finding, example]) => `${finding}\n    e.g. ${example}`)).toEqual([]);
    expect(checked).toBeGreaterThan(ops.length * FUZZ_REQUESTS_PER_OPERATION * 0.5);
  });

  it('answers over the rate limits with a documented 429 on every guarded operation', async () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 25));
    const limited = await startTestApp({ clock, config: { logLevel: 'fatal', rateLimit: { perKeyPerSecond: 1, perIpPerSecond: 1, burstSeconds: 1 } } });
    try {
      const failures: string[] = [];
      for (const op of ops) {
        const url = op.path.replace(/\{\w+\}/g, 'x1');
        const statuses = new Set<number>();
        // An open live stream never ends: that route only gets calls that are refused.
        const credentials = op.path === '/v1/analytics/live' ? [{}, {}, {}] : [{}, {}, { authorization: `Bearer ${limited.demo.adminToken}` }, { authorization: `Bearer ${limited.demo.adminToken}` }];
        for (const headers of credentials) {
          const response = await limited.app.inject({ method: op.method, url, headers });
          statuses.add(response.statusCode);
          failures.push(...check(op, `over the limit with ${Object.keys(headers).join() || 'no credential'}`, response));
        }
        if (op.operation.security?.length && !statuses.has(429)) failures.push(`${op.key}: no 429 among ${[...statuses].join(', ')}`);
      }
      expect(failures).toEqual([]);
    } finally {
      await limited.close();
    }
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Method } from './fuzz/fuzz-requests';
import { mediaType } from './openapi/contract-checker';
import { describeAnswer, openContract, STATE_CHANGING, type ContractContext } from './openapi/contract-context';

const ALL_METHODS: Method[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/**
 * Answers that the OpenAPI document states and that the HTTP surface guarantees: 405 with
 * Allow, one id length everywhere, the dashboard origin check for cookies, an empty JSON body as
 * no body, no type coercion of bodies. Checked against the document like every other answer.
 */
describe('the service answers as its OpenAPI document says, after the HTTP changes', () => {
  let c: ContractContext;
  beforeAll(async () => {
    c = await openContract();
  });
  afterAll(() => c?.close());

  it('answers an undocumented method on a documented path with 405 and Allow', async () => {
    const failures: string[] = [];
    for (const [path, methods] of Object.entries(c.doc.paths)) {
      const allowed = Object.keys(methods).map((m) => m.toUpperCase());
      const op = c.ops.find((o) => o.path === path)!;
      for (const method of ALL_METHODS.filter((m) => !allowed.includes(m))) {
        const response = await c.send(method, c.sampleUrl(op), c.admin());
        const allow = String(response.headers.allow ?? '').split(',').map((m) => m.trim());
        const problem = mediaType(response.headers['content-type']) === 'application/problem+json';
        if (response.statusCode !== 405 || !problem || !allowed.every((m) => allow.includes(m))) failures.push(describeAnswer(`${method} ${path} (Allow: ${allow.join(', ')})`, response));
      }
    }
    expect(failures).toEqual([]);
  });

  it('answers path parameters of the documented maximum length normally, not 414', async () => {
    const failures: string[] = [];
    for (const op of c.ops) {
      for (const parameter of op.operation.parameters?.filter((p) => p.in === 'path' && typeof p.schema.maxLength === 'number') ?? []) {
        const url = c.withSegment(c.sampleUrl(op), op, parameter.name, 'a'.repeat(parameter.schema.maxLength as number));
        const response = await c.send(op.method, url, c.admin());
        if (response.statusCode === 414 || response.statusCode >= 500) failures.push(describeAnswer(`${op.key} ${parameter.name} of ${String(parameter.schema.maxLength)} characters`, response));
        failures.push(...c.check(op, `${parameter.name} of the maximum length`, response));
      }
    }
    expect(failures).toEqual([]);
  });

  it('refuses state-changing calls authenticated by the session cookie from another origin with 403', async () => {
    const login = await c.t.app.inject({ method: 'POST', url: '/v1/session', payload: { token: c.fixture.adminToken } });
    const cookie = String(login.headers['set-cookie']).split(';')[0]!;
    const failures: string[] = [];
    const dashboard = new URL(c.t.services.config.publicUrl);
    for (const op of c.ops.filter((o) => STATE_CHANGING.has(o.method) && Object.keys(o.operation.responses).includes('403'))) {
      // Unknown ids (a call that got through would change nothing) and the sample's valid body.
      const url = c.sampleUrl(op).split('/').map((segment, i) => (op.path.split('/')[i]?.startsWith('{') ? '987654321' : segment)).join('/');
      const body = c.samples.find(([key]) => key === op.key)?.[1].body;
      const json: Record<string, string> = body === undefined ? {} : { 'content-type': 'application/json' };
      const payload = body === undefined ? undefined : JSON.stringify(body);
      for (const origin of [undefined, 'http://localhost:9999', 'https://evil.example', 'null']) {
        const response = await c.send(op.method, url, { cookie, host: dashboard.host, ...json, ...(origin ? { origin } : {}) }, payload);
        if (response.statusCode !== 403) failures.push(describeAnswer(`${op.key} with the cookie from ${origin ?? 'no origin'}`, response));
        failures.push(...c.check(op, 'cookie from another origin', response));
      }
      const own = await c.send(op.method, url, { cookie, host: dashboard.host, origin: dashboard.origin, 'sec-fetch-site': 'same-origin', ...json }, payload);
      if (own.statusCode === 403 || own.statusCode === 401) failures.push(describeAnswer(`${op.key} with the cookie from the dashboard's origin`, own));
      failures.push(...c.check(op, "cookie from the dashboard's origin", own));
    }
    expect(failures).toEqual([]);
  });

  it('takes an empty body sent as application/json as no body', async () => {
    const failures: string[] = [];
    for (const op of c.ops.filter((o) => STATE_CHANGING.has(o.method) && !o.operation.requestBody)) {
      const credential = c.credentialOf(op);
      const response = await c.send(op.method, c.sampleUrl(op), { ...credential, 'content-type': 'application/json' }, '');
      if (response.statusCode === 400) failures.push(describeAnswer(`${op.key} with an empty application/json body`, response));
      failures.push(...c.check(op, 'empty JSON body', response));
    }
    expect(failures).toEqual([]);
  });

  it('refuses body values of another type than documented instead of converting them', async () => {
    const failures: string[] = [];
    const cases: Array<[string, string, string, object]> = [
      ['POST /v1/broadcasts', 'POST', '/v1/broadcasts', { id: false, campaignId: c.fixture.campaignId }],
      ['POST /v1/campaigns', 'POST', '/v1/campaigns', { name: 12 }],
      ['PATCH /v1/settings', 'PATCH', '/v1/settings', { featureFlags: { polls: 0 } }],
      ['PATCH /v1/webhooks/{id}', 'PATCH', `/v1/webhooks/${c.fixture.webhookId}`, { enabled: 'true' }],
    ];
    for (const [key, method, url, body] of cases) {
      const op = c.ops.find((o) => o.key === key)!;
      expect(c.checker.requestViolations(op.operation, 'application/json', body), `${key} ${JSON.stringify(body)} is valid per the document`).not.toEqual([]);
      const response = await c.send(method, url, { ...c.admin(), 'content-type': 'application/json' }, JSON.stringify(body));
      if (response.statusCode !== 400) failures.push(describeAnswer(`${key} ${JSON.stringify(body)}`, response));
      failures.push(...c.check(op, JSON.stringify(body), response));
    }
    expect(failures).toEqual([]);
  });
});

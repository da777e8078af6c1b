import { createConfig, lintFromString } from '@redocly/openapi-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './test-app';

interface Operation {
  operationId?: string;
  security?: unknown[];
  parameters?: Array<{ in: string; name: string; schema: Record<string, unknown> }>;
  requestBody?: { content: Record<string, { schema: Record<string, unknown> }> };
  responses: Record<string, { content?: Record<string, unknown>; headers?: Record<string, unknown> }>;
}
type Document = { paths: Record<string, Record<string, Operation>> };

const STATE_CHANGING = new Set(['post', 'put', 'patch', 'delete']);

describe('the OpenAPI document', () => {
  let t: TestApp;
  let source: string;
  let doc: Document;
  const operations = () => Object.entries(doc.paths).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ path, method, op })));
  const operation = (method: string, path: string) => doc.paths[path]![method]!;

  beforeAll(async () => {
    t = await startTestApp();
    source = (await t.app.inject({ url: '/v1/openapi.json' })).body;
    doc = JSON.parse(source) as Document;
  });
  afterAll(() => t?.close());

  it('passes the Redocly linter (recommended-strict) without a problem', async () => {
    const config = await createConfig({
      extends: ['recommended-strict'],
      // The server entry is the deployment's own SVC_PUBLIC_URL, which is localhost on a developer's machine.
      rules: { 'no-server-example.com': 'off' },
    });
    const problems = await lintFromString({ source, absoluteRef: 'openapi.json', config });
    expect(problems.map((p) => `${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`)).toEqual([]);
  });

  it('gives every operation a unique camelCase operationId', () => {
    const ids = operations().map(({ op }) => op.operationId);
    expect(ids.filter((id) => !/^[a-z][a-zA-Z0-9]*$/.test(String(id)))).toEqual([]);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('describes every error as application/problem+json, and nothing else as it', () => {
    for (const { path, method, op } of operations()) {
      for (const [status, response] of Object.entries(op.responses)) {
        const types = Object.keys(response.content ?? {});
        if (Number(status) >= 400) expect(types, `${method} ${path} ${status}`).toEqual(['application/problem+json']);
        else expect(types, `${method} ${path} ${status}`).not.toContain('application/problem+json');
      }
    }
  });

  it('lists the statuses of the HTTP layer: 405 everywhere, 400 and 414 on path parameters, 413 and 415 on bodies, 401, 403 and 429 behind credentials', () => {
    for (const { path, method, op } of operations()) {
      const statuses = Object.keys(op.responses);
      const where = `${method} ${path}`;
      expect(statuses, where).toContain('405');
      if (path.includes('{')) expect(statuses, where).toEqual(expect.arrayContaining(['400', '414']));
      if (STATE_CHANGING.has(method)) expect(statuses, where).toEqual(expect.arrayContaining(['400', '413', '415']));
      if (op.security?.length) expect(statuses, where).toEqual(expect.arrayContaining(['401', '429']));
      if (op.responses['429']) expect(Object.keys(op.responses['429'].headers ?? {}), where).toContain('retry-after');
      const byAdminToken = op.security?.some((s) => Object.keys(s as object).includes('adminToken'));
      const byApiKey = op.security?.some((s) => Object.keys(s as object).some((name) => name.startsWith('apiKey')));
      // The session cookie stands in for the admin token on admin routes (not on ingest, which takes API keys).
      if (byAdminToken && !byApiKey && STATE_CHANGING.has(method)) expect(statuses, where).toContain('403');
    }
  });

  it('gives the live stream as text/event-stream and the export as JSON, NDJSON and CSV', () => {
    expect(Object.keys(operation('get', '/v1/analytics/live').responses['200']!.content!)).toEqual(['text/event-stream']);
    expect(Object.keys(operation('get', '/v1/analytics/events').responses['200']!.content!).sort()).toEqual(['application/json', 'application/x-ndjson', 'text/csv']);
  });

  it("says that live viewer counts are the answering node's own in cluster mode", () => {
    for (const path of ['/v1/analytics/watching-now', '/v1/analytics/overview', '/v1/analytics/live']) {
      expect((operation('get', path) as { description?: string }).description, path).toMatch(/cluster mode.*only the sockets of the node that answers/i);
    }
  });

  it('gives query parameters their real types and formats', () => {
    const params = Object.fromEntries(operation('get', '/v1/analytics/events').parameters!.map((p) => [p.name, p]));
    expect(params.campaignId!.schema).toMatchObject({ type: 'integer', minimum: 1 });
    expect(params.limit!.schema).toMatchObject({ type: 'integer', minimum: 1, maximum: 10_000 });
    expect(params.from!.schema.anyOf).toEqual([{ format: 'date' }, { format: 'date-time' }]);
    expect(params.event).toMatchObject({ explode: false, schema: { type: 'array' } });
    for (const path of ['/v1/analytics/overview', '/v1/analytics/live']) {
      const campaignId = operation('get', path).parameters!.find((p) => p.name === 'campaignId')!;
      expect(campaignId.schema, path).toMatchObject({ type: 'integer' });
    }
  });

  it('marks the session routes as public and the webhook URL as a URI', () => {
    expect(operation('post', '/v1/session').security).toEqual([]);
    expect(operation('delete', '/v1/session').security).toEqual([]);
    const body = operation('post', '/v1/webhooks').requestBody!.content['application/json']!.schema as { properties: { url: object } };
    expect(body.properties.url).toMatchObject({ type: 'string', format: 'uri' });
  });
});

import type { LightMyRequestResponse } from 'fastify';
import type { Method } from '../fuzz/fuzz-requests';
import { startTestApp, type TestApp } from '../test-app';
import { ContractChecker, type OpenApiDocument, type OpenApiOperation } from './contract-checker';
import { createFixture, validSamples, type Fixture, type Sample } from './contract-samples';

export const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** One operation of the document. */
export interface Op {
  /** `METHOD /path/{template}`, as the samples are keyed. */
  key: string;
  method: Method;
  path: string;
  operation: OpenApiOperation;
}

/** A served app with its own document, a fixture, the valid samples, and the helpers the contract tests share. */
export interface ContractContext {
  t: TestApp;
  doc: OpenApiDocument;
  checker: ContractChecker;
  fixture: Fixture;
  samples: Array<[string, Sample]>;
  ops: Op[];
  admin(): Record<string, string>;
  /** The credential headers of the operation's first sample (the admin token when it has none). */
  credentialOf(op: Op): Record<string, string>;
  /** The URL of the operation's first valid sample, without its query: real ids in every path parameter. */
  sampleUrl(op: Op): string;
  /** `url` with the path parameter `name` of `op` replaced by `value`. */
  withSegment(url: string, op: Op, name: string, value: string): string;
  send(method: string, url: string, headers: Record<string, string>, payload?: string | Buffer): Promise<LightMyRequestResponse>;
  /** Violations of the document by one answer, each naming the operation and `what` was sent. */
  check(op: Op, what: string, response: LightMyRequestResponse): string[];
  close(): Promise<void>;
}

/** A line for a failure report: what was sent and the start of the answer. */
export function describeAnswer(what: string, response: LightMyRequestResponse): string {
  return `${what} → ${response.statusCode} ${response.body.slice(0, 160)}`;
}

/** Starts an app (listening, for the live stream) with private webhook URLs allowed, and reads its document. */
export async function openContract(): Promise<ContractContext> {
  const t = await startTestApp({ listen: true, config: { webhookAllowPrivate: true, logLevel: 'fatal' } });
  const doc = (await t.app.inject({ url: '/v1/openapi.json' })).json() as OpenApiDocument;
  const checker = new ContractChecker(doc);
  const ops = Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({ key: `${method.toUpperCase()} ${path}`, method: method.toUpperCase() as Method, path, operation })),
  );
  const fixture = await createFixture(t.app, t.demo.adminToken, t.demo.apiKey);
  const samples = validSamples(fixture);
  const admin = () => ({ authorization: `Bearer ${fixture.adminToken}` });
  const firstSample = (op: Op) => samples.find(([key]) => key === op.key)?.[1];
  return {
    t,
    doc,
    checker,
    fixture,
    samples,
    ops,
    admin,
    credentialOf: (op) => firstSample(op)?.headers ?? admin(),
    sampleUrl: (op) => firstSample(op)?.url.split('?')[0] ?? op.path.replace(/\{\w+\}/g, 'x1'),
    withSegment: (url, op, name, value) => {
      const index = op.path.split('/').indexOf(`{${name}}`);
      return url.split('/').map((segment, i) => (i === index ? value : segment)).join('/');
    },
    send: (method, url, headers, payload) => t.app.inject({ method: method as Method, url, headers, ...(payload === undefined ? {} : { payload }) }),
    check: (op, what, response) =>
      checker.violations(op.operation, { status: response.statusCode, headers: response.headers, body: response.body }).map((v) => `${op.key} ${what}: ${v}`),
    close: () => t.close(),
  };
}

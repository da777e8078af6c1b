import { gzipSync } from 'node:zlib';
import { EVENT_NAMES, type EventName } from '@svc/protocol';
import { validEvent } from '../events-fixture';
import { badJsonBodies, HOSTILE_STRINGS, hostileHeaders, hostileSegment, invalidUtf8Body, mutateBody, Picker, wrongValue } from './hostile-inputs';

export type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT' | 'HEAD' | 'OPTIONS';

export interface Operation {
  method: Method;
  /** OpenAPI path template, e.g. `/v1/webhooks/{id}`. */
  path: string;
}

export interface FuzzRequest {
  method: Method;
  url: string;
  headers: Record<string, string>;
  body?: string | Buffer;
  /** The operation it was aimed at, to group failures. */
  target: string;
}

export interface Credentials {
  adminToken: string;
  apiKey: string;
  sessionCookie: string;
}

/** Routes outside the OpenAPI document that a browser or a probe may call. */
export const OTHER_ROUTES: Operation[] = [
  { method: 'GET', path: '/' },
  { method: 'GET', path: '/settings' },
  { method: 'GET', path: '/demo' },
  { method: 'GET', path: '/demo/demo.js' },
  { method: 'GET', path: '/sdk/svc-core.js' },
  { method: 'GET', path: '/assets/dashboard.js' },
  { method: 'GET', path: '/healthz' },
  { method: 'GET', path: '/readyz' },
  { method: 'GET', path: '/metrics' },
  { method: 'GET', path: '/v1/openapi.json' },
  { method: 'GET', path: '/{traversal}' },
  { method: 'GET', path: '/v1/{traversal}' },
  { method: 'GET', path: '/sdk/{traversal}' },
];

const TRAVERSALS = ['..%2f..%2fetc%2fpasswd', '../../../etc/passwd', '%2e%2e/%2e%2e/package.json', 'sdk/..%2f..%2fpackage.json', '.env', '.git/config', 'node_modules/.bin', '%c0%ae%c0%ae/etc/passwd', 'assets/..%5c..%5cwindows', 'v1/../v1/settings', '//etc/passwd'];

/** Valid bodies of the operations that take one, mutated or made hostile by the fuzzer. */
export const VALID_BODIES: Record<string, Record<string, unknown>> = {
  'PATCH /v1/settings': { theme: { primaryColor: '#123456' }, retentionMonths: 12 },
  'POST /v1/api-keys': { name: 'fuzz key' },
  'POST /v1/session': { token: 'svc_sk_x' },
  'POST /v1/campaigns': { name: 'fuzz campaign' },
  'PATCH /v1/campaigns/{id}': { name: 'renamed' },
  'POST /v1/sponsors': { name: 'fuzz sponsor' },
  'PATCH /v1/sponsors/{id}': { name: 'renamed' },
  'POST /v1/broadcasts': { id: 'fuzz-broadcast', campaignId: 1, title: 'Fuzz' },
  'PATCH /v1/broadcasts/{id}': { title: 'renamed' },
  'POST /v1/broadcasts/{id}/overlays': { type: 'poll', question: 'Fuzz?', options: ['a', 'b'] },
  'PATCH /v1/broadcasts/{id}/overlays/{overlayId}': { type: 'poll', question: 'Fuzz?', options: ['a', 'b'] },
  'POST /v1/webhooks': { url: 'http://127.0.0.1:9/fuzz', description: 'fuzz' },
  'PATCH /v1/webhooks/{id}': { description: 'fuzz' },
  'POST /v1/webhooks/{id}/replay': { since: '2026-01-01T00:00:00Z' },
};

const METHODS: Method[] = ['GET', 'POST', 'PATCH', 'DELETE', 'PUT', 'HEAD', 'OPTIONS'];
const CONTENT_TYPES = ['application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml', 'application/octet-stream', 'text/html', 'application/json; charset=utf-16', 'application/jsonx', ''];

/**
 * Builds one malformed or hostile request after another, aimed at the given operations.
 * `ids` hold real object ids of the fuzzing tenant so that some requests reach the handlers.
 */
export class RequestFactory {
  constructor(
    private readonly pick: Picker,
    private readonly operations: Operation[],
    private readonly credentials: Credentials,
    private readonly ids: Record<string, string>,
  ) {}

  next(options: { allowStreaming: boolean }): FuzzRequest {
    const { pick } = this;
    const op = pick.one(this.operations);
    const target = `${op.method} ${op.path}`;
    const method = pick.chance(0.9) ? op.method : pick.one(METHODS);
    const headers: Record<string, string> = {};
    this.credential(headers, op);
    // The live stream never ends for a valid credential; only its refusals are fuzzed in-process.
    if (!options.allowStreaming && op.path === '/v1/analytics/live' && (headers.authorization || headers.cookie)) {
      headers.authorization = 'Bearer svc_sk_nope';
      delete headers.cookie;
    }
    if (pick.chance(0.3)) Object.assign(headers, hostileHeaders(pick));
    let url = this.url(op);
    if (pick.chance(0.5)) url += this.query();
    const request: FuzzRequest = { method, url, headers, target };
    if (method !== 'GET' && method !== 'HEAD' && (method !== 'DELETE' || pick.chance(0.2))) this.body(request, op);
    return request;
  }

  private credential(headers: Record<string, string>, op: Operation): void {
    const { pick, credentials } = this;
    const roll = pick.random();
    const publicRoute = op.path === '/v1/events' || op.path === '/v1/sdk/config';
    // Most hostile traffic comes without a valid credential; about one request in ten gets into the handlers.
    if (roll < 0.6) return;
    if (roll < 0.88) headers.authorization = pick.one(['Bearer svc_sk_00000000000000000000000000000000', 'Bearer', `Bearer ${credentials.apiKey}`, 'Basic YTpi']);
    else if (roll < (publicRoute ? 0.9 : 0.95)) headers.authorization = `Bearer ${credentials.adminToken}`;
    else if (roll < 0.99) headers['x-svc-api-key'] = credentials.apiKey;
    else headers.cookie = credentials.sessionCookie;
  }

  private url(op: Operation): string {
    const { pick } = this;
    return op.path.replace(/\{(\w+)\}/g, (_, name: string) => {
      if (name === 'traversal') return pick.one(TRAVERSALS);
      const resource = op.path.split('/')[2] ?? '';
      const real = this.ids[name === 'id' ? resource : name];
      return real && pick.chance(0.4) ? encodeURIComponent(real) : hostileSegment(pick);
    });
  }

  private query(): string {
    const { pick } = this;
    const names = ['apiKey', 'from', 'to', 'campaignId', 'broadcastId', 'userId', 'sponsorId', 'country', 'event', 'format', 'limit', 'cursor', 'status', 'since', '__proto__', 'a[b]', ''];
    const parts: string[] = [];
    const count = 1 + pick.int(4);
    for (let i = 0; i < count; i++) {
      const name = pick.one(names);
      const value = pick.one<() => string>([
        () => hostileSegment(pick),
        () => pick.one(['2026-11-21', '2026-11-21T00:00:00Z', '2026-02-30', '99999-01-01', '0000-00-00', 'json', 'csv', 'ndjson', 'xml', '10001', '0', '-5', '1.5', 'poll.voted,nope', 'DE', 'pending']),
        () => (name === 'apiKey' ? this.credentials.apiKey : 'x'),
      ])();
      parts.push(`${encodeURIComponent(name)}=${value}`);
    }
    if (pick.chance(0.1)) parts.push(parts[0]!); // repeated parameter
    return `?${parts.join('&')}`;
  }

  private body(request: FuzzRequest, op: Operation): void {
    const { pick } = this;
    const key = `${op.method} ${op.path}`;
    const json = (value: unknown) => {
      request.headers['content-type'] ??= op.path === '/v1/events' && pick.chance(0.3) ? 'text/plain' : 'application/json';
      request.body = JSON.stringify(value);
    };
    const roll = pick.int(10);
    if (roll < 4) json(key === 'POST /v1/events' ? this.events() : mutateBody(pick, VALID_BODIES[key] ?? { x: 1 }));
    else if (roll < 6) {
      request.headers['content-type'] ??= 'application/json';
      request.body = badJsonBodies(pick);
    } else if (roll === 6) {
      request.headers['content-type'] ??= pick.one(['application/json', 'text/plain']);
      request.body = invalidUtf8Body(pick);
    } else if (roll === 7) json(wrongValue(pick));
    else if (roll === 8) {
      request.headers['content-type'] = pick.one(CONTENT_TYPES);
      request.body = pick.one(['a=1&b=2', '<xml/>', '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--x--', JSON.stringify(VALID_BODIES[key] ?? {})]);
      if (!request.headers['content-type']) delete request.headers['content-type'];
    } else {
      request.headers['content-type'] ??= 'application/json';
      request.headers['content-encoding'] = pick.one(['gzip', 'br', 'deflate', 'x-unknown']);
      request.body = pick.chance(0.5) ? gzipSync(JSON.stringify(VALID_BODIES[key] ?? this.events())) : Buffer.from('not compressed');
    }
  }

  /** One event or a batch, valid or mutated, with hostile strings where strings go. */
  private events(): unknown {
    const { pick } = this;
    const one = () => {
      const name = pick.one<EventName>(EVENT_NAMES);
      const at = new Date(Date.now() - pick.int(3_600_000));
      const event = validEvent(name, at, { broadcastId: pick.chance(0.5) ? pick.one(HOSTILE_STRINGS) || 'b' : 'fuzz-broadcast', eventId: undefined });
      if (pick.chance(0.5)) (event.data as Record<string, unknown>)[pick.one(HOSTILE_STRINGS) || 'k'] = pick.one(HOSTILE_STRINGS);
      if (pick.chance(0.3)) event.userId = pick.one(HOSTILE_STRINGS) || null;
      return pick.chance(0.6) ? mutateBody(pick, event) : event;
    };
    if (pick.chance(0.5)) return one();
    return { sentAt: pick.chance(0.8) ? new Date().toISOString() : wrongValue(pick), events: Array.from({ length: 1 + pick.int(5) }, one) };
  }
}

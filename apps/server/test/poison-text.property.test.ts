import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { uuidv7 } from 'uuidv7';
import { validEvent } from './events-fixture';
import { expectServiceWorks } from './service-health';
import { startTestApp, type TestApp } from './test-app';
import { TestViewer } from './ws-client';

/** Characters that break text handling somewhere: lone surrogates, NUL, BOM, non-characters, astral ones. */
const AWKWARD = ['\ud800', '\udbff', '\udc00', '\udfff', '\u0000', '\ufeff', '\ufffe', '\uffff', '\ufdd0', '\u{1f600}', '\u{10ffff}', 'a', '"', '\\'];
const hostileString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 16 }),
  fc.array(fc.constantFrom(...AWKWARD), { minLength: 1, maxLength: 8 }).map((parts) => parts.join('')),
);

/** Every string and key inside a value. */
const texts = (value: unknown): string[] =>
  typeof value === 'string' ? [value]
    : value !== null && typeof value === 'object'
      ? Object.entries(value).flatMap(([key, item]) => [...(Array.isArray(value) ? [] : [key]), ...texts(item)])
      : [];

const USER = 'prop-user';
const ROOM = 'prop-room';

describe('arbitrary text through every ingest path (property)', () => {
  const apps: TestApp[] = [];
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close().catch(() => undefined);
  });

  it('stores only well-formed text, and after a restart rollups, deletion, every export with every filter and a room reload succeed', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(hostileString, { minLength: 6, maxLength: 12 }), async (strings) => {
        const first = await startTestApp({ listen: true });
        apps.push(first);
        const now = new Date(first.services.clock.now());
        const key = first.demo.apiKey;
        const events = strings.flatMap((text, i) => [
          validEvent('poll.voted', now, { userId: USER, broadcastId: ROOM, data: { pollId: text, questionText: text, optionSelected: text, optionIndex: 0, [text]: [text, { [text]: text }] } }),
          validEvent('sponsor_moment.tapped', now, { userId: i % 2 ? text : USER, broadcastId: ROOM, data: { momentId: text, sponsorId: text } }),
          validEvent('product.tapped', now, { userId: USER, broadcastId: ROOM, sponsorId: text, orderId: text, data: { productId: text } }),
        ]);
        // JSON.stringify writes each lone surrogate as a \uXXXX escape, as an attacker would.
        const half = Math.ceil(events.length / 2);
        const json = await fetch(`${first.url}/v1/events`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-svc-api-key': key },
          body: JSON.stringify({ events: events.slice(0, half) }),
        });
        expect(json.status).toBe(200);
        const beacon = await fetch(`${first.url}/v1/events?apiKey=${key}`, {
          method: 'POST',
          headers: { 'content-type': 'text/plain;charset=UTF-8' },
          body: JSON.stringify({ events: events.slice(half) }),
        });
        expect(beacon.status).toBe(200);
        // A query string carries UTF-8: URLSearchParams sends a lone surrogate as U+FFFD, which is what the room is called.
        const contentId = `${ROOM}${strings[0]!.replace(/[\u0000-\u001f\u007f]/g, '')}`.slice(0, 100).toWellFormed();
        const viewer = await TestViewer.connect(first.url, { apiKey: key, sessionId: `svc_prop${uuidv7().slice(-12)}`, contentId });
        await viewer.next((m) => m.type === 'welcome');
        const tracked = strings.map((text) => ({ event: 'poll.viewed', timestamp: now.toISOString(), userId: USER, data: { pollId: text, questionText: text, [text]: text } }));
        const ack = await viewer.request({ type: 'track', events: tracked });
        expect(ack.type).toBe('ack');
        viewer.close();

        const stored = await first.services.storage.events.queryEvents({ tenantSeq: first.demo.seq }, { limit: 10_000 });
        expect(stored.length).toBeGreaterThan(0);
        for (const text of texts(stored)) expect(text.isWellFormed()).toBe(true);
        const rejected = await first.services.ingest.listRejected(await first.services.tenants.getTenant('demo'), 1000);
        for (const text of texts(rejected.data)) expect(text.isWellFormed()).toBe(true);

        await first.close();
        const second = await startTestApp({ listen: true, reopen: first });
        apps.push(second);
        await expectServiceWorks(second, ROOM, USER);
        await expectServiceWorks(second, contentId, USER);
      }),
      // Each run starts and restarts a service: no shrinking, the failing strings are reported as they are.
      { numRuns: 3, endOnFailure: true },
    );
  }, 120_000);
});

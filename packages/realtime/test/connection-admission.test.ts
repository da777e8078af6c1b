import { afterEach, describe, expect, it } from 'vitest';
import { addressKey } from '../src';
import { startGateway, type Attempt, type AttemptOptions, type Harness } from './gateway-harness';

const BAD_KEY = `svc_pk_${'N'.repeat(32)}`;
/** Connection attempts in flight at once: the floods stay bounded on a small machine. */
const WAVE = 20;

/** Makes `count` attempts, `WAVE` at a time, and tells how each ended. */
async function flood(h: Harness, count: number, options: (i: number) => AttemptOptions): Promise<Attempt[]> {
  const results: Attempt[] = [];
  for (let start = 0; start < count; start += WAVE) {
    const wave = Array.from({ length: Math.min(WAVE, count - start) }, (_, i) => h.attempt(options(start + i)));
    results.push(...(await Promise.all(wave)));
  }
  return results;
}

const refusals = (results: Attempt[]) => results.filter((r): r is Extract<Attempt, { kind: 'refused' }> => r.kind === 'refused');
const opened = (results: Attempt[]) => results.filter((r): r is Extract<Attempt, { kind: 'opened' }> => r.kind === 'opened');

describe('connection admission per client address', () => {
  let h: Harness;
  afterEach(async () => {
    await h.close();
  });

  it('caps 2,000 rapid sockets from one address at its limit, refusing the rest with 429 problem+json before the handshake, and lets another address in', async () => {
    h = await startGateway({ maxConnectionsPerAddress: 20, upgradeBurst: 10_000 });
    const results = await flood(h, 2_000, (i) => ({ sessionId: `svc_flood${i}` }));
    const held = opened(results);
    expect(held).toHaveLength(20);
    for (const { viewer } of held) await viewer.next((m) => m.type === 'welcome');
    const refused = refusals(results);
    expect(refused).toHaveLength(1_980);
    for (const refusal of refused) {
      expect(refusal.status).toBe(429);
      expect(refusal.headers['content-type']).toBe('application/problem+json');
      expect(Number(refusal.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(JSON.parse(refusal.body)).toMatchObject({ status: 429, code: 'rate_limited' });
    }
    expect(h.gateway.openConnectionsOf('127.0.0.1')).toBe(20);

    const other = await h.attempt({ sessionId: 'svc_real', localAddress: '127.0.0.2' });
    expect(other.kind).toBe('opened');
    expect(await (other as Extract<Attempt, { kind: 'opened' }>).viewer.next((m) => m.type === 'welcome')).toBeTruthy();

    // A socket that closes gives its place back.
    held[0]!.viewer.ws.close();
    await held[0]!.viewer.closed;
    await expect.poll(() => h.gateway.openConnectionsOf('127.0.0.1')).toBe(19);
    expect((await h.attempt({ sessionId: 'svc_again' })).kind).toBe('opened');
  });

  it('throttles a flood of upgrades with a bad key, which cost more than good ones, and lets another address in', async () => {
    h = await startGateway({ upgradesPerAddressPerSecond: 10, upgradeBurst: 100, badKeyUpgradeCost: 10 });
    const results = await flood(h, 2_000, (i) => ({ apiKey: BAD_KEY, sessionId: `svc_bad${i}` }));
    const handshaken = opened(results);
    // A bucket of 100 pays for about 10 bad keys; one wave may be in flight when it runs dry.
    expect(handshaken.length).toBeLessThanOrEqual(10 + WAVE);
    for (const { viewer } of handshaken) expect(await viewer.closed).toEqual({ code: 4401, reason: 'invalid_api_key' });
    const refused = refusals(results);
    expect(refused.length).toBe(2_000 - handshaken.length);
    expect(refused.every((r) => r.status === 429 && Number(r.headers['retry-after']) >= 1)).toBe(true);

    // The address now waits, good key or not (the clock stands still); another address does not.
    const same = await h.attempt({ sessionId: 'svc_same' });
    expect(same).toMatchObject({ kind: 'refused', status: 429 });
    const other = await h.attempt({ sessionId: 'svc_other', localAddress: '127.0.0.2' });
    expect(other.kind).toBe('opened');

    // Good keys from a third address: the same bucket lets ten times as many through.
    const good = await flood(h, 120, (i) => ({ sessionId: `svc_good${i}`, localAddress: '127.0.0.3' }));
    expect(opened(good)).toHaveLength(100);
  });

  it("lets a real viewer in from another address while one address holds all it may of the tenant's connections", async () => {
    h = await startGateway({ maxConnectionsPerTenant: 50 });
    const attacker = opened(await flood(h, 50, (i) => ({ sessionId: `svc_hog${i}` })));
    const outcomes = await Promise.all(
      attacker.map(({ viewer }) => Promise.race([viewer.next((m) => m.type === 'welcome').then(() => 'welcome'), viewer.closed.then((c) => `${c.code} ${c.reason}`)])),
    );
    // Ten percent of the tenant's 50 by default.
    expect(outcomes.filter((o) => o === 'welcome')).toHaveLength(5);
    expect(outcomes.filter((o) => o === '1013 too_many_connections_from_address')).toHaveLength(45);

    const real = await h.attempt({ sessionId: 'svc_viewer', localAddress: '127.0.0.2' });
    expect(real.kind).toBe('opened');
    expect(await (real as Extract<Attempt, { kind: 'opened' }>).viewer.next((m) => m.type === 'welcome')).toMatchObject({ type: 'welcome' });
  });
});

describe('addressKey', () => {
  it('counts IPv4 addresses as they are, IPv4-mapped ones as IPv4, and IPv6 ones by their /64', () => {
    expect(addressKey('203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('::ffff:203.0.113.7')).toBe('203.0.113.7');
    // The same address in hex: its own key, not one shared by every IPv4 client written so.
    expect(addressKey('::ffff:cb00:7107')).toBe('203.0.113.7');
    expect(addressKey('::ffff:c633:6401')).toBe('198.51.100.1');
    expect(addressKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:0db8:0001:0002:ffff:1:2:3')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressKey('::1')).toBe('0:0:0:0::/64');
    expect(addressKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
  });
});

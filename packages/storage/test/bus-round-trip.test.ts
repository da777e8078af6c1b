import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BusRoundTrip, connectNats } from '../src';
import { natsAvailable, startNats, type NatsServer } from './nats-server';

const available = natsAvailable();

async function until(check: () => boolean, withinMs: number): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not within ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe.skipIf(!available)('BusRoundTrip', () => {
  let server: NatsServer;
  beforeAll(async () => {
    server = await startNats();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('times pings through the NATS server, the first at once and then every interval', async () => {
    const connection = await connectNats(server.url);
    const trips: number[] = [];
    const roundTrip = new BusRoundTrip(connection, { onRoundTrip: (ms) => trips.push(ms), intervalMs: 50 });
    roundTrip.start();
    await until(() => trips.length >= 3, 5_000);
    roundTrip.stop();
    await connection.close();
    for (const ms of trips) {
      expect(ms).toBeGreaterThan(0);
      expect(ms).toBeLessThan(1_000);
    }
  });

  it('counts a ping that does not come back in time as lost', async () => {
    const connection = await connectNats(server.url);
    let nowMs = 0;
    const trips: number[] = [];
    let lost = 0;
    // The clock jumps past the timeout before each ping comes back: it is stale when it arrives.
    const roundTrip = new BusRoundTrip(connection, { onRoundTrip: (ms) => trips.push(ms), onLost: () => lost++, intervalMs: 30, timeoutMs: 100, now: () => (nowMs += 1_000) });
    roundTrip.start();
    await until(() => lost >= 2, 5_000);
    roundTrip.stop();
    await connection.close();
    expect(trips).toEqual([]);
  });
});

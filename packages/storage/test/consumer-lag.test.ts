import { describe, expect, it } from 'vitest';
import { ConsumerLagReader, CONSUMER_LAG_CACHE_MS } from '../src';

/** A JetStream manager whose consumer info counts its requests and answers `pending` (or fails). */
function fakeManager(pending: { waiting: number; unacknowledged: number } | Error) {
  const asked: string[] = [];
  const jsm = {
    consumers: {
      info: async (stream: string, consumer: string) => {
        asked.push(`${stream}/${consumer}`);
        if (pending instanceof Error) throw pending;
        return { num_pending: pending.waiting, num_ack_pending: pending.unacknowledged };
      },
    },
  };
  return { jsm: jsm as unknown as ConstructorParameters<typeof ConsumerLagReader>[0], asked };
}

const WATCHED = [
  { stream: 'EVENTS', consumer: 'writer' },
  { stream: 'WEBHOOKS', consumer: 'dispatcher' },
];

describe('ConsumerLagReader', () => {
  it("reads each consumer's waiting and unacknowledged messages from its info", async () => {
    const { jsm } = fakeManager({ waiting: 7, unacknowledged: 3 });
    expect(await new ConsumerLagReader(jsm, WATCHED).read()).toEqual([
      { stream: 'EVENTS', consumer: 'writer', waiting: 7, unacknowledged: 3 },
      { stream: 'WEBHOOKS', consumer: 'dispatcher', waiting: 7, unacknowledged: 3 },
    ]);
  });

  it('asks JetStream at most once per cache time, however often it is scraped', async () => {
    const { jsm, asked } = fakeManager({ waiting: 1, unacknowledged: 0 });
    let nowMs = 1_000;
    const reader = new ConsumerLagReader(jsm, WATCHED, { now: () => nowMs });
    await Promise.all([reader.read(), reader.read()]);
    nowMs += CONSUMER_LAG_CACHE_MS - 1;
    await reader.read();
    expect(asked).toEqual(['EVENTS/writer', 'WEBHOOKS/dispatcher']);
    nowMs += 1;
    await reader.read();
    expect(asked).toHaveLength(4);
  });

  it('does not keep a failed reading: the next scrape asks again', async () => {
    const { jsm, asked } = fakeManager(new Error('no responders'));
    const reader = new ConsumerLagReader(jsm, WATCHED, { now: () => 5_000 });
    await expect(reader.read()).rejects.toThrow(/lag of the consumer writer of EVENTS could not be read/);
    await expect(reader.read()).rejects.toThrow();
    expect(asked.filter((name) => name === 'EVENTS/writer')).toHaveLength(2);
  });
});

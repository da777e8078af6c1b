import { afterEach, describe, expect, it } from 'vitest';
import type { Bus, IngestResult } from '@svc/protocol';
import { TENANT, pollRecord, startGateway, type Harness, type Viewer } from './gateway-harness';

const VOTERS = 40;
const THROTTLE_MS = 1_000;
/** How long the fake ingest takes to answer (a JetStream publish and its PubAck, roughly). */
const INGEST_MS = 15;

interface StoredEvent {
  event: string;
  eventId: string;
  sessionId: string;
  userId: string | null;
  broadcastId: string;
  timestamp: string;
  data: { optionIndex?: number };
}

/**
 * An ingest that takes a while, stores every event and announces the stored votes on the bus
 * (`poll.voted`) as the real one does, one notice per request.
 */
function slowIngest(bus: () => Bus) {
  const requests: StoredEvent[][] = [];
  return {
    requests,
    sink: {
      ingest: async ({ body }: { body: unknown }): Promise<IngestResult> => {
        const events = ((body as { events?: StoredEvent[] }).events ?? [body]) as StoredEvent[];
        requests.push(events);
        await new Promise((resolve) => setTimeout(resolve, INGEST_MS));
        const votes = events
          .filter((e) => e.event === 'poll.voted')
          .map((e) => ({ eventId: e.eventId, sessionId: e.sessionId, userId: e.userId, broadcastId: e.broadcastId, timestampMs: Date.parse(e.timestamp), receivedAtMs: Date.parse(e.timestamp), data: JSON.stringify(e.data) }));
        if (votes.length) await bus().publish('poll.voted', { tenantSeq: TENANT.seq, votes });
        return { accepted: events.length, duplicates: 0, rejected: [] };
      },
      campaignOf: async () => 1,
    },
  };
}

describe('gateway writes under a burst of votes', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('coalesces a burst of votes into far fewer ingest requests; every vote is acknowledged and counted once', async () => {
    let harness: Harness | undefined;
    const ingest = slowIngest(() => harness!.bus);
    h = harness = await startGateway({ throttleMs: THROTTLE_MS }, [pollRecord('poll-1')], [], undefined, { events: ingest.sink });
    const voters: Viewer[] = [];
    for (let i = 0; i < VOTERS; i++) voters.push(await h.join(`svc_burst${i}`));

    const answers = await Promise.all(voters.map((voter, i) => voter.request({ type: 'poll.vote', pollId: 'poll-1', optionIndex: i % 2 })));

    expect(answers.map((a) => a.type)).toEqual(voters.map(() => 'ack'));
    const ackedIds = answers.map((a) => (a.ids as string[])[0]);
    const storedIds = ingest.requests.flat().map((e) => e.eventId);
    expect(new Set(ackedIds).size).toBe(VOTERS);
    expect(storedIds.sort()).toEqual([...ackedIds].sort());
    expect(ingest.requests.length).toBeLessThanOrEqual(VOTERS / 4);
    // Each stored event kept its own session and choice.
    ackedIds.forEach((id, i) => {
      expect(ingest.requests.flat().find((e) => e.eventId === id)).toMatchObject({ sessionId: `svc_burst${i}`, data: { optionIndex: i % 2 } });
    });
    // Counted once each, although every vote also came back from ingest on the bus.
    h.timers.advance(THROTTLE_MS);
    const watcher = voters[0]!;
    const final = await watcher.next((m) => m.type === 'poll.results' && m.total === VOTERS);
    expect(final.counts).toEqual([VOTERS / 2, VOTERS / 2]);
    h.timers.advance(3 * THROTTLE_MS);
    await watcher.settle();
    expect(watcher.ofType('poll.results').every((m) => (m.total as number) <= VOTERS)).toBe(true);
  });

  it('sends a lone vote at once, as one event of its own', async () => {
    let harness: Harness | undefined;
    const ingest = slowIngest(() => harness!.bus);
    h = harness = await startGateway({ throttleMs: THROTTLE_MS }, [pollRecord('poll-1')], [], undefined, { events: ingest.sink });
    const voter = await h.join('svc_alone');
    const started = Date.now();
    expect(await voter.request({ type: 'poll.vote', pollId: 'poll-1', optionIndex: 1 })).toMatchObject({ type: 'ack' });
    expect(ingest.requests).toHaveLength(1);
    expect(ingest.requests[0]).toHaveLength(1);
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});

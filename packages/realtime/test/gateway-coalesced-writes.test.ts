import { afterEach, describe, expect, it } from 'vitest';
import type { Bus, IngestResult } from '@svc/protocol';
import { hashUserId } from '@svc/storage';
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

  it('gives ingest the time the gateway took each waiting vote in, not the later time its request goes out', async () => {
    const answers: Array<() => void> = [];
    const requests: Array<{ body: unknown; receivedAtMs?: number }> = [];
    const events = {
      ingest: (request: { body: unknown; receivedAtMs?: number }) =>
        new Promise<IngestResult>((resolve) => {
          requests.push(request);
          answers.push(() => resolve({ accepted: 1, duplicates: 0, rejected: [] }));
        }),
      campaignOf: async () => 1,
    };
    h = await startGateway({ throttleMs: THROTTLE_MS }, [pollRecord('poll-1')], [], undefined, { events });
    const first = await h.join('svc_first');
    const waiting = await h.join('svc_waiting');
    const firstAtMs = h.clock.now();
    first.ws.send(JSON.stringify({ type: 'poll.vote', pollId: 'poll-1', optionIndex: 0, requestId: 'v1' }));
    for (let i = 0; i < 200 && requests.length < 1; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    h.clock.advance(1_000);
    const takenAtMs = h.clock.now();
    const queued = waiting.request({ type: 'poll.vote', pollId: 'poll-1', optionIndex: 1 });
    await waiting.settle();
    // The first request is still under way a minute later; then the waiting vote goes out.
    h.clock.advance(60_000);
    answers[0]!();
    for (let i = 0; i < 200 && requests.length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(requests.map((r) => r.receivedAtMs)).toEqual([firstAtMs, takenAtMs]);
    answers[1]!();
    expect(await queued).toMatchObject({ type: 'ack' });
  });

  it('lets an erasure run only after the votes waiting behind a write under way have been written', async () => {
    const answers: Array<() => void> = [];
    const bodies: unknown[] = [];
    const events = {
      ingest: ({ body }: { body: unknown }) =>
        new Promise<IngestResult>((resolve) => {
          bodies.push(body);
          answers.push(() => resolve({ accepted: 1, duplicates: 0, rejected: [] }));
        }),
      campaignOf: async () => 1,
    };
    h = await startGateway({ throttleMs: THROTTLE_MS }, [pollRecord('poll-1')], [], undefined, { events });
    const first = await h.join('svc_first', 'b', 'someone');
    const erased = await h.join('svc_erased', 'b', 'leaving');
    first.ws.send(JSON.stringify({ type: 'poll.vote', pollId: 'poll-1', optionIndex: 0, requestId: 'v1' }));
    for (let i = 0; i < 200 && bodies.length < 1; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    const queued = erased.request({ type: 'poll.vote', pollId: 'poll-1', optionIndex: 1 });
    await erased.settle();
    expect(bodies).toHaveLength(1);

    let erasing = false;
    const erasure = h.bus.publish('user.erasing', { jobId: 'job', tenantSeq: TENANT.seq, userHash: hashUserId('leaving'), userId: 'leaving' }).then(() => (erasing = true));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(erasing).toBe(false);
    answers[0]!();
    for (let i = 0; i < 200 && bodies.length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    // The waiting vote, written with the userId it was cast under, before the erasure goes on.
    expect(bodies[1]).toMatchObject({ event: 'poll.voted', userId: 'leaving' });
    expect(erasing).toBe(false);
    answers[1]!();
    await erasure;
    expect(await queued).toMatchObject({ type: 'ack' });
  });
});

import { describe, expect, it } from 'vitest';
import { MAX_EVENTS_PER_REQUEST, MAX_REQUEST_BYTES } from '@svc/ingest';
import { SvcError, type IngestResult, type RejectedEvent } from '@svc/protocol';
import type { Tenant } from '@svc/storage';
import { IngestCoalescer, MAX_EVENTS_PER_INGEST, MAX_INGEST_BYTES, type IngestSink, type SingleEventWrite } from '../src';
import { TENANT } from './gateway-harness';

interface Call {
  tenant: Tenant;
  source: 'client' | 'server';
  country: string | null;
  body: unknown;
  answer(result: IngestResult): void;
  fail(error: unknown): void;
}

/** A sink whose requests wait until the test answers them, in the order they came. */
class FakeSink implements IngestSink {
  readonly calls: Call[] = [];

  ingest(request: { tenant: Tenant; source: 'client' | 'server'; country: string | null; body: unknown }): Promise<IngestResult> {
    return new Promise((resolve, reject) => this.calls.push({ ...request, answer: resolve, fail: reject }));
  }

  /** The events of call `i`, one or a batch. */
  eventsOf(i: number): unknown[] {
    const body = this.calls[i]!.body as { events?: unknown[] };
    return body.events ?? [body];
  }
}

const ALL_STORED = (count: number): IngestResult => ({ accepted: count, duplicates: 0, rejected: [] });

function vote(n: number, tenant: Tenant = TENANT, country: string | null = 'DE', source: 'client' | 'server' = 'client'): SingleEventWrite {
  return { tenant, source, country, event: { event: 'poll.voted', eventId: `e${n}`, sessionId: `s${n}`, broadcastId: 'b', timestamp: `2026-01-01T00:00:0${n % 10}.000Z`, data: { pollId: 'p', optionIndex: n % 2 } } };
}

/** Lets the promise callbacks queued so far run. */
const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('IngestCoalescer', () => {
  it('sends an event at once, alone and unwrapped, when nothing of its key is under way', async () => {
    const sink = new FakeSink();
    const coalescer = new IngestCoalescer(sink);
    const outcome = coalescer.write(vote(1));
    expect(sink.calls).toHaveLength(1);
    expect(sink.calls[0]!.body).toEqual(vote(1).event);
    sink.calls[0]!.answer(ALL_STORED(1));
    expect(await outcome).toBeNull();
    // Idle again: the next one goes at once too.
    const again = coalescer.write(vote(2));
    expect(sink.calls).toHaveLength(2);
    expect(sink.calls[1]!.body).toEqual(vote(2).event);
    sink.calls[1]!.answer(ALL_STORED(1));
    expect(await again).toBeNull();
  });

  it('sends what waited behind a request as one batch, in order, each event as written', async () => {
    const sink = new FakeSink();
    const coalescer = new IngestCoalescer(sink);
    const outcomes = [1, 2, 3, 4].map((n) => coalescer.write(vote(n)));
    expect(sink.calls).toHaveLength(1);
    sink.calls[0]!.answer(ALL_STORED(1));
    await tick();
    expect(sink.calls).toHaveLength(2);
    expect(sink.calls[1]!.body).toEqual({ events: [2, 3, 4].map((n) => vote(n).event) });
    expect(sink.calls[1]).toMatchObject({ tenant: TENANT, source: 'client', country: 'DE' });
    sink.calls[1]!.answer(ALL_STORED(3));
    expect(await Promise.all(outcomes)).toEqual([null, null, null, null]);
  });

  it("answers each caller with its own event's rejection, found by its index in the batch", async () => {
    const sink = new FakeSink();
    const coalescer = new IngestCoalescer(sink);
    const outcomes = [1, 2, 3, 4].map((n) => coalescer.write(vote(n)));
    sink.calls[0]!.answer(ALL_STORED(1));
    await tick();
    const late: RejectedEvent = { index: 2, code: 'timestamp_too_old', detail: 'old' };
    sink.calls[1]!.answer({ accepted: 2, duplicates: 0, rejected: [late] });
    expect(await Promise.all(outcomes)).toEqual([null, null, null, { ...late, index: 0 }]);
  });

  it('fails every caller of a request that failed, and only those', async () => {
    const sink = new FakeSink();
    const coalescer = new IngestCoalescer(sink);
    const first = coalescer.write(vote(1));
    const batched = [2, 3].map((n) => coalescer.write(vote(n)));
    const error = new SvcError('storage_unavailable', 'down');
    sink.calls[0]!.answer(ALL_STORED(1));
    await tick();
    sink.calls[1]!.fail(error);
    expect(await first).toBeNull();
    for (const outcome of batched) await expect(outcome).rejects.toBe(error);
    // The lane works on after a failure.
    const after = coalescer.write(vote(4));
    expect(sink.calls).toHaveLength(3);
    sink.calls[2]!.answer(ALL_STORED(1));
    expect(await after).toBeNull();
  });

  it('keeps tenants, sources and countries apart: each key has a request of its own under way', () => {
    const sink = new FakeSink();
    const coalescer = new IngestCoalescer(sink);
    const other: Tenant = { ...TENANT, seq: 2, id: 'other' };
    coalescer.write(vote(1));
    coalescer.write(vote(2, other));
    coalescer.write(vote(3, TENANT, 'FR'));
    coalescer.write(vote(4, TENANT, null));
    coalescer.write(vote(5, TENANT, 'DE', 'server'));
    coalescer.write(vote(6));
    expect(sink.calls.map((c) => [c.tenant.seq, c.source, c.country])).toEqual([
      [1, 'client', 'DE'],
      [2, 'client', 'DE'],
      [1, 'client', 'FR'],
      [1, 'client', null],
      [1, 'server', 'DE'],
    ]);
  });

  it('splits what waited at the limit of events per request, sending the rest after', async () => {
    const sink = new FakeSink();
    const coalescer = new IngestCoalescer(sink, { maxEvents: 3 });
    const outcomes = [1, 2, 3, 4, 5, 6].map((n) => coalescer.write(vote(n)));
    sink.calls[0]!.answer(ALL_STORED(1));
    await tick();
    expect(sink.calls).toHaveLength(2);
    expect(sink.eventsOf(1)).toHaveLength(3);
    sink.calls[1]!.answer(ALL_STORED(3));
    await tick();
    expect(sink.calls).toHaveLength(3);
    expect(sink.eventsOf(2)).toEqual([vote(5).event, vote(6).event]);
    sink.calls[2]!.answer({ accepted: 1, duplicates: 0, rejected: [{ index: 1, code: 'duplicate', detail: 'x' }] });
    expect((await Promise.all(outcomes)).map((o) => o?.code ?? null)).toEqual([null, null, null, null, null, 'duplicate']);
  });

  it('keeps a request within the limit of bytes, measured as the JSON body ingest would receive', async () => {
    const sink = new FakeSink();
    const eventBytes = Buffer.byteLength(JSON.stringify(vote(2).event));
    // Room for two events and their batch wrapping, not for three.
    const coalescer = new IngestCoalescer(sink, { maxBytes: JSON.stringify({ events: [vote(2).event, vote(3).event] }).length + eventBytes - 1 });
    [1, 2, 3, 4, 5].forEach((n) => void coalescer.write(vote(n)));
    sink.calls[0]!.answer(ALL_STORED(1));
    await tick();
    expect(sink.eventsOf(1)).toEqual([vote(2).event, vote(3).event]);
    const body = JSON.stringify(sink.calls[1]!.body);
    expect(Buffer.byteLength(body)).toBeLessThanOrEqual(JSON.stringify({ events: [vote(2).event, vote(3).event] }).length);
    sink.calls[1]!.answer(ALL_STORED(2));
    await tick();
    expect(sink.eventsOf(2)).toEqual([vote(4).event, vote(5).event]);
  });

  it('settles once everything written before has been answered, queued events included', async () => {
    const sink = new FakeSink();
    const coalescer = new IngestCoalescer(sink);
    void coalescer.write(vote(1));
    void coalescer.write(vote(2));
    let settled = false;
    void coalescer.settled().then(() => (settled = true));
    sink.calls[0]!.answer(ALL_STORED(1));
    await tick();
    expect(settled).toBe(false);
    sink.calls[1]!.answer(ALL_STORED(1));
    await tick();
    expect(settled).toBe(true);
  });

  it("uses ingest's own limits of one request by default", () => {
    expect(MAX_EVENTS_PER_INGEST).toBe(MAX_EVENTS_PER_REQUEST);
    expect(MAX_INGEST_BYTES).toBe(MAX_REQUEST_BYTES);
  });
});

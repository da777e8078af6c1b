import { describe, expect, it } from 'vitest';
import { ManualClock } from '@svc/protocol';
import type { AttemptOutcome, DeliveryAttemptLog, LoggedState, NewDelivery, QueuedDelivery, WebhookEndpointRecord, WebhookQueue } from '@svc/storage';
import type { EndpointDirectory } from '../src/dispatcher';
import type { SendResult, WebhookSender } from '../src/http-sender';
import { FORGET_AFTER_MS, MIN_DEFER_MS, SLOW_FOR_MS } from '../src/endpoint-turns';
import { QueueDispatcher } from '../src/queue-dispatcher';
import { RETRY_DELAYS_MS } from '../src/retry-schedule';

const T0 = 1_767_000_000_000;

/** A message as the fake queue hands it out, with what the dispatcher answered. */
interface FakeMessage extends QueuedDelivery {
  answer: null | 'done' | { retryIn: number };
}

/** The queue in memory: `pull` hands out what was put in, then waits a moment. */
class FakeQueue implements WebhookQueue {
  readonly waiting: FakeMessage[] = [];
  readonly handedOut: FakeMessage[] = [];

  put(delivery: NewDelivery, extra: { attemptsBefore?: number; redelivered?: boolean } = {}): FakeMessage {
    const message: FakeMessage = {
      delivery, attemptsBefore: extra.attemptsBefore ?? 0, redelivered: extra.redelivered ?? false, answer: null,
      done: () => void (message.answer ??= 'done'),
      retryIn: (delayMs) => void (message.answer ??= { retryIn: delayMs }),
      working: () => {},
    };
    this.waiting.push(message);
    return message;
  }

  async enqueue(): Promise<void> {}
  async requeue(): Promise<void> {}

  async *pull(max: number, expiresMs: number, signal?: AbortSignal): AsyncIterable<QueuedDelivery> {
    for (const message of this.waiting.splice(0, max)) {
      this.handedOut.push(message);
      yield message;
    }
    if (!signal?.aborted) await new Promise((resolve) => setTimeout(resolve, Math.min(expiresMs, 5)));
  }
}

class FakeLog implements DeliveryAttemptLog {
  readonly rows: Array<{ id: string; outcome: AttemptOutcome }> = [];
  readonly states = new Map<string, LoggedState>();
  async appendAttempts(entries: Array<{ delivery: NewDelivery; outcome: AttemptOutcome }>): Promise<void> {
    for (const { delivery, outcome } of entries) this.rows.push({ id: delivery.id, outcome });
  }
  async latestStates(ids: string[]): Promise<Map<string, LoggedState>> {
    return new Map(ids.flatMap((id) => (this.states.has(id) ? [[id, this.states.get(id)!] as const] : [])));
  }
}

/** Answers with `answer` (200 by default), or holds requests until released. */
class FakeSender implements WebhookSender {
  readonly sent: string[] = [];
  answer: Partial<SendResult> = { statusCode: 200 };
  hold = false;
  private readonly held: Array<() => void> = [];
  async send(url: string, headers: Record<string, string>): Promise<SendResult> {
    this.sent.push(`${url.split('/').pop()}:${headers['webhook-id']}`);
    if (this.hold) await new Promise<void>((resolve) => this.held.push(resolve));
    return { statusCode: null, error: null, retryAfter: undefined, latencyMs: 4, ...this.answer };
  }
  release(): void {
    for (const go of this.held.splice(0)) go();
  }
  async close(): Promise<void> {}
}

const endpoint = (id: string, extra: Partial<WebhookEndpointRecord> = {}): WebhookEndpointRecord => ({
  tenantSeq: 1, id, url: `http://receiver.test/${id}`, description: null, eventTypes: null, enabled: true, disabledReason: null,
  secret: 'whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0', previousSecret: null, previousSecretExpiresAt: null, failingSince: null, createdAt: 0, updatedAt: 0,
  ...extra,
});

/** Endpoints by id; `unknown` asks are counted; reports of health are kept. */
class FakeDirectory implements EndpointDirectory {
  readonly endpoints = new Map<string, WebhookEndpointRecord>();
  readonly unknownAsked: string[] = [];
  readonly health: Array<{ id: string; ok: boolean; disableReason?: string }> = [];
  endpoint(_tenantSeq: number, id: string) {
    return this.endpoints.get(id);
  }
  async reportHealth(e: WebhookEndpointRecord, outcome: { ok: boolean; disableReason?: string }) {
    this.health.push({ id: e.id, ok: outcome.ok, disableReason: outcome.disableReason });
    if (outcome.disableReason) this.endpoints.set(e.id, { ...e, enabled: false, disabledReason: outcome.disableReason });
  }
  async endpointUnknown(_tenantSeq: number, id: string) {
    this.unknownAsked.push(id);
  }
}

let count = 0;
const delivery = (endpointId = 'e', extra: Partial<NewDelivery> = {}): NewDelivery => {
  const n = ++count;
  return { id: `d${n}`, tenantSeq: 1, endpointId, eventId: `evt${n}`, event: 'poll.voted', userId: null, payload: '{}', createdAt: T0, ...extra };
};

function setup(options: { random?: () => number; erased?: (d: NewDelivery) => boolean; maxInFlightPerEndpoint?: number } = {}) {
  const queue = new FakeQueue();
  const log = new FakeLog();
  const directory = new FakeDirectory();
  directory.endpoints.set('e', endpoint('e'));
  const sender = new FakeSender();
  const clock = new ManualClock(T0);
  const dispatcher = new QueueDispatcher(queue, log, directory, sender, {
    clock, random: options.random ?? (() => 0.5), erased: options.erased, maxInFlightPerEndpoint: options.maxInFlightPerEndpoint,
  });
  return { queue, log, directory, sender, clock, dispatcher };
}

/** One endpoint answering in `latencyMs`, one request at a time; its first request held until `release`. */
function slowEndpoint(latencyMs: number) {
  const parts = setup({ maxInFlightPerEndpoint: 1 });
  parts.sender.hold = true;
  parts.sender.answer = { statusCode: 200, latencyMs };
  return parts;
}

/** Runs the dispatcher until every message handed out is answered. */
async function drain(queue: FakeQueue, dispatcher: QueueDispatcher, expected: number): Promise<void> {
  dispatcher.start();
  await expect.poll(() => queue.handedOut.filter((m) => m.answer !== null).length, { timeout: 5_000, interval: 5 }).toBe(expected);
  await dispatcher.stop();
}

describe('QueueDispatcher', () => {
  it('sends a delivery, logs it as delivered and acknowledges it', async () => {
    const { queue, log, sender, dispatcher } = setup();
    const d = delivery();
    const message = queue.put(d);
    await drain(queue, dispatcher, 1);
    expect(sender.sent).toEqual([`e:${d.eventId}`]);
    expect(log.rows).toEqual([{ id: d.id, outcome: expect.objectContaining({ status: 'delivered', attempts: 1, attemptedAt: T0, statusCode: 200 }) }]);
    expect(message.answer).toBe('done');
  });

  it("gives a failed delivery back with the schedule's delay and jitter, or with a longer Retry-After", async () => {
    const { queue, log, sender, dispatcher } = setup({ random: () => 1 });
    sender.answer = { statusCode: 503 };
    const plain = queue.put(delivery());
    await drain(queue, dispatcher, 1);
    // The second attempt's delay, 20% later at the top of the jitter.
    expect(plain.answer).toEqual({ retryIn: RETRY_DELAYS_MS[1]! * 1.2 });
    expect(log.rows[0]!.outcome).toMatchObject({ status: 'pending', attempts: 1, nextAttemptAt: T0 + RETRY_DELAYS_MS[1]! * 1.2, statusCode: 503, error: 'HTTP 503' });
    sender.answer = { statusCode: 429, retryAfter: '120' };
    const throttled = queue.put(delivery());
    await drain(queue, dispatcher, 2);
    expect(throttled.answer).toEqual({ retryIn: 120_000 });
  });

  it('counts the attempts of a redelivered delivery from the log and gives up after the last of the schedule', async () => {
    const { queue, log, sender, dispatcher } = setup();
    sender.answer = { statusCode: null, error: 'ECONNREFUSED: refused' };
    const d = delivery();
    log.states.set(d.id, { status: 'pending', attempts: RETRY_DELAYS_MS.length - 1 });
    const message = queue.put(d, { redelivered: true });
    await drain(queue, dispatcher, 1);
    expect(message.answer).toBe('done');
    expect(log.rows[0]!.outcome).toMatchObject({ status: 'failed', attempts: RETRY_DELAYS_MS.length, nextAttemptAt: null, error: 'ECONNREFUSED: refused' });
  });

  it('acknowledges unsent a delivery the log holds as finished (logged, then not acknowledged before a stop)', async () => {
    const { queue, log, sender, dispatcher } = setup();
    const d = delivery();
    log.states.set(d.id, { status: 'delivered', attempts: 1 });
    const message = queue.put(d, { redelivered: true });
    await drain(queue, dispatcher, 1);
    expect(sender.sent).toEqual([]);
    expect(log.rows).toEqual([]);
    expect(message.answer).toBe('done');
  });

  it("drops unsent and unlogged an erased user's delivery and a deleted endpoint's", async () => {
    const { queue, log, directory, sender, dispatcher } = setup({ erased: (d) => d.userId === 'gone' });
    const erased = queue.put(delivery('e', { userId: 'gone' }));
    const deleted = queue.put(delivery('deleted'));
    const kept = queue.put(delivery('e', { userId: 'stays' }));
    await drain(queue, dispatcher, 3);
    expect([erased.answer, deleted.answer, kept.answer]).toEqual(['done', 'done', 'done']);
    expect(sender.sent).toEqual([`e:${kept.delivery.eventId}`]);
    expect(log.rows.map((r) => r.id)).toEqual([kept.delivery.id]);
    expect(directory.unknownAsked).toEqual(['deleted']);
    // Found deleted once: later deliveries of that endpoint are dropped without asking again.
    const later = queue.put(delivery('deleted'));
    await drain(queue, dispatcher, 4);
    expect(later.answer).toBe('done');
    expect(directory.unknownAsked).toEqual(['deleted']);
  });

  it("logs a disabled endpoint's delivery as failed, unsent, so that it can be replayed", async () => {
    const { queue, log, directory, sender, dispatcher } = setup();
    directory.endpoints.set('off', endpoint('off', { enabled: false, disabledReason: 'The receiver answered 410 Gone.' }));
    const message = queue.put(delivery('off'), { attemptsBefore: 2 });
    await drain(queue, dispatcher, 1);
    expect(sender.sent).toEqual([]);
    expect(message.answer).toBe('done');
    expect(log.rows[0]!.outcome).toMatchObject({ status: 'failed', attempts: 2, error: 'Endpoint disabled: The receiver answered 410 Gone.' });
  });

  it('disables the endpoint on a 410 and retries nothing more', async () => {
    const { queue, log, directory, sender, dispatcher } = setup();
    sender.answer = { statusCode: 410 };
    const message = queue.put(delivery());
    await drain(queue, dispatcher, 1);
    expect(message.answer).toBe('done');
    expect(log.rows[0]!.outcome).toMatchObject({ status: 'failed', attempts: 1 });
    expect(directory.health).toEqual([{ id: 'e', ok: false, disableReason: 'The receiver answered 410 Gone.' }]);
  });

  it('keeps to 8 requests per endpoint, lets another endpoint through meanwhile, and hands back what waits when stopped', async () => {
    const { queue, directory, sender, dispatcher } = setup();
    directory.endpoints.set('quiet', endpoint('quiet'));
    sender.hold = true;
    const busy = Array.from({ length: 20 }, () => queue.put(delivery('e')));
    const quiet = queue.put(delivery('quiet'));
    dispatcher.start();
    await expect.poll(() => sender.sent.length).toBe(9);
    expect(sender.sent).toContain(`quiet:${quiet.delivery.eventId}`);
    const stopped = dispatcher.stop();
    // The 12 that waited for a turn go back to the queue at once; the 9 being sent finish.
    await expect.poll(() => busy.filter((m) => m.answer !== null).length).toBe(12);
    expect(busy.filter((m) => m.answer !== null).every((m) => typeof m.answer === 'object' && m.answer!.retryIn === 0)).toBe(true);
    sender.hold = false;
    sender.release();
    await stopped;
    expect(busy.filter((m) => m.answer === 'done')).toHaveLength(8);
    expect(quiet.answer).toBe('done');
  });

  it("hands back for a while what exceeds an endpoint's waiting room, so that one endpoint cannot fill the dispatcher", async () => {
    const queue = new FakeQueue();
    const directory = new FakeDirectory();
    directory.endpoints.set('e', endpoint('e'));
    const sender = new FakeSender();
    sender.hold = true;
    const dispatcher = new QueueDispatcher(queue, new FakeLog(), directory, sender, { clock: new ManualClock(T0), maxWaitingPerEndpoint: 2 });
    const messages = Array.from({ length: 12 }, () => queue.put(delivery('e')));
    dispatcher.start();
    await expect.poll(() => messages.filter((m) => m.answer !== null).length).toBe(2);
    expect(messages.slice(10).map((m) => m.answer)).toEqual([{ retryIn: MIN_DEFER_MS }, { retryIn: MIN_DEFER_MS }]);
    sender.hold = false;
    sender.release();
    await expect.poll(() => messages.filter((m) => m.answer === 'done').length).toBe(10);
    await dispatcher.stop();
  });

  it("logs nothing of a delivery whose user's erasure began while it was being sent", async () => {
    const erasing = new Set<string>();
    const { queue, log, sender, dispatcher } = setup({ erased: (d) => d.userId !== null && erasing.has(d.userId) });
    sender.hold = true;
    const message = queue.put(delivery('e', { userId: 'ann' }));
    dispatcher.start();
    await expect.poll(() => sender.sent.length).toBe(1);
    erasing.add('ann');
    sender.release();
    await expect.poll(() => message.answer).toBe('done');
    await dispatcher.stop();
    expect(log.rows).toEqual([]);
  });

  it("keeps few of a slow endpoint's deliveries waiting, handing back the rest for about as long as those take", async () => {
    const { queue, sender, dispatcher } = slowEndpoint(15_000);
    // Its answer time unknown, all wait for their turn.
    const messages = Array.from({ length: 5 }, () => queue.put(delivery('e')));
    dispatcher.start();
    await expect.poll(() => sender.sent.length).toBe(1);
    expect(messages.filter((m) => m.answer !== null)).toEqual([]);
    // 15 s an answer, one at a time: 30 s of work is two deliveries waiting; the newest two go back
    // each for as long as those before it take.
    sender.hold = false;
    sender.release();
    await expect.poll(() => messages.slice(3).map((m) => m.answer)).toEqual([{ retryIn: 30_000 }, { retryIn: 45_000 }]);
    await expect.poll(() => messages.slice(0, 3).map((m) => m.answer)).toEqual(['done', 'done', 'done']);
    const more = queue.put(delivery('e'));
    await expect.poll(() => more.answer).toBe('done');
    await dispatcher.stop();
  });

  it('hands back none of an endpoint slowed for a moment (a burst), only once its slow answers span 10 s, and forgets a slow spell after a quiet minute', async () => {
    // 1.5 s an answer: slow on average, but its slow answers span only the 1.5 s of the first so far.
    const { queue, sender, clock, dispatcher } = slowEndpoint(1_500);
    const sentBefore = () => sender.sent.length;
    /** Puts `count` deliveries while the endpoint holds its requests; resolves once one is out. */
    const burst = async (count: number) => {
      const sent = sentBefore();
      sender.hold = true;
      const messages = Array.from({ length: count }, () => queue.put(delivery('e')));
      await expect.poll(() => sender.sent.length).toBe(sent + 1);
      return messages;
    };
    const answers = (messages: Array<{ answer: unknown }>) => messages.map((m) => (m.answer === null || m.answer === 'done' ? m.answer : 'back'));
    dispatcher.start();
    const first = await burst(40);
    sender.hold = false;
    sender.release();
    await expect.poll(() => answers(first)).toEqual(first.map(() => 'done'));
    // Ten seconds later it still answers in 1.5 s: its slow answers span 11.5 s, it is slow.
    // 30 s of work (20 deliveries) waits, the rest goes back, each for at least a second.
    clock.advance(SLOW_FOR_MS);
    const one = await burst(1);
    sender.release();
    await expect.poll(() => one[0]!.answer).toBe('done');
    const second = await burst(40);
    await expect.poll(() => answers(second).filter((a) => a === 'back').length).toBe(19);
    for (const m of second.filter((m) => m.answer !== null)) expect((m.answer as { retryIn: number }).retryIn).toBeGreaterThanOrEqual(MIN_DEFER_MS);
    sender.hold = false;
    sender.release();
    await expect.poll(() => answers(second).filter((a) => a === 'done').length).toBe(21);
    // Not heard from for over a minute: judged afresh, its next burst waits whole.
    clock.advance(FORGET_AFTER_MS + 1);
    const third = await burst(40);
    sender.hold = false;
    sender.release();
    await expect.poll(() => answers(third)).toEqual(third.map(() => 'done'));
    // Half a minute later, fast again: its slow answers spanned 1.5 s only, however long ago they began.
    clock.advance(FORGET_AFTER_MS / 2);
    sender.answer = { statusCode: 200, latencyMs: 100 };
    const fourth = await burst(40);
    sender.hold = false;
    sender.release();
    await expect.poll(() => answers(fourth)).toEqual(fourth.map(() => 'done'));
    await dispatcher.stop();
  });

  it('hands back at once a delivery whose log lookup ends after the dispatcher was stopped', async () => {
    const { queue, log, sender, dispatcher } = setup();
    let answerLookup = () => {};
    log.latestStates = (ids) => new Promise((resolve) => (answerLookup = () => resolve(new Map(ids.map((id) => [id, { status: 'pending', attempts: 1 }])))));
    const message = queue.put(delivery(), { redelivered: true });
    dispatcher.start();
    await expect.poll(() => queue.handedOut.length).toBe(1);
    await new Promise((resolve) => setImmediate(resolve));
    const stopped = dispatcher.stop();
    answerLookup();
    await stopped;
    expect(message.answer).toEqual({ retryIn: 0 });
    expect(sender.sent).toEqual([]);
  });

  it("starts an endpoint's next delivery once the receiver has answered, while the last one's outcome is being logged", async () => {
    const { queue, log, directory, sender } = setup();
    let logged = () => {};
    const writing = new Promise<void>((resolve) => (logged = resolve));
    const appended = log.appendAttempts.bind(log);
    log.appendAttempts = async (entries) => {
      await writing;
      await appended(entries);
    };
    const dispatcher = new QueueDispatcher(queue, log, directory, sender, { clock: new ManualClock(T0), maxInFlightPerEndpoint: 1 });
    const [first, second] = [queue.put(delivery()), queue.put(delivery())];
    dispatcher.start();
    await expect.poll(() => sender.sent.length).toBe(2);
    expect([first.answer, second.answer]).toEqual([null, null]);
    logged();
    await expect.poll(() => [first.answer, second.answer]).toEqual(['done', 'done']);
    await dispatcher.stop();
  });
});

import { describe, expect, it } from 'vitest';
import { LocalBus, ManualClock } from '@svc/protocol';
import { hashUserId, type AttemptOutcome, type WebhookEndpointRecord, type WebhookDeliveryStore } from '@svc/storage';
import { MAX_IN_FLIGHT_PER_ENDPOINT, WebhookDispatcher, type EndpointDirectory } from '../src/dispatcher';
import type { SendResult, WebhookSender } from '../src/http-sender';

/** The parts of the store the dispatcher uses, in memory: `pending` is what the store still holds as pending. */
function fakeStore(pending: Set<string>): WebhookDeliveryStore {
  return {
    listPending: async () => [],
    pendingAmong: async (ids: string[]) => new Set(ids.filter((id) => pending.has(id))),
    recordAttempts: async (attempts: Array<{ id: string; outcome: AttemptOutcome }>) => {
      for (const a of attempts) if (a.outcome.status !== 'pending') pending.delete(a.id);
    },
  } as Partial<WebhookDeliveryStore> as WebhookDeliveryStore;
}

const endpoint = (id: string): WebhookEndpointRecord => ({
  tenantSeq: 1, id, url: `http://receiver.test/${id}`, description: null, eventTypes: null, enabled: true, disabledReason: null,
  secret: 'whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0', previousSecret: null, previousSecretExpiresAt: null, failingSince: null, createdAt: 0, updatedAt: 0,
});

const directory: EndpointDirectory = {
  endpoint: (_tenantSeq, id) => endpoint(id),
  reportHealth: async () => {},
  endpointUnknown: async () => {},
};

/** Answers 200 once `release` is called for a request (or at once when `hold` is false); notes the order of sends. */
class FakeSender implements WebhookSender {
  readonly sent: Array<{ endpoint: string; id: string }> = [];
  hold = false;
  private readonly waiting: Array<() => void> = [];

  async send(url: string, headers: Record<string, string>): Promise<SendResult> {
    this.sent.push({ endpoint: url.split('/').pop()!, id: headers['webhook-id']! });
    if (this.hold) await new Promise<void>((resolve) => this.waiting.push(resolve));
    return { statusCode: 200, error: null, retryAfter: undefined, latencyMs: 1 };
  }

  releaseAll(): void {
    for (const release of this.waiting.splice(0)) release();
  }

  async close(): Promise<void> {}
}

const delivery = (id: string, endpointId: string, userId: string | null = null) => ({
  id, tenantSeq: 1, endpointId, eventId: `evt-${id}`, payload: '{}', attempts: 0, userId,
});

describe('WebhookDispatcher', () => {
  it('sends each endpoint its deliveries in order, endpoints taking turns within the limits', async () => {
    const pending = new Set<string>();
    const sender = new FakeSender();
    sender.hold = true;
    const dispatcher = new WebhookDispatcher(fakeStore(pending), directory, sender, new ManualClock(0));
    const busy = Array.from({ length: 40 }, (_, i) => delivery(`a${i}`, 'busy'));
    for (const d of busy) pending.add(d.id);
    pending.add('b0');
    dispatcher.enqueue(busy);
    dispatcher.enqueue([delivery('b0', 'quiet')]);
    const round = dispatcher.runDue();
    // The quiet endpoint's one delivery does not wait behind the busy one's forty.
    await new Promise((resolve) => setImmediate(resolve));
    expect(sender.sent.filter((s) => s.endpoint === 'busy')).toHaveLength(MAX_IN_FLIGHT_PER_ENDPOINT);
    expect(sender.sent.map((s) => s.id)).toContain('evt-b0');
    sender.hold = false;
    sender.releaseAll();
    await round;
    while (sender.sent.length < 41) await dispatcher.runDue();
    expect(sender.sent.filter((s) => s.endpoint === 'busy').map((s) => s.id)).toEqual(busy.map((d) => `evt-${d.id}`));
    await dispatcher.stop();
  });

  it("forgets a user's queued deliveries before their erasure, by the userId or by its hash alone", async () => {
    const pending = new Set(['u1', 'u2', 'other']);
    const sender = new FakeSender();
    const dispatcher = new WebhookDispatcher(fakeStore(pending), directory, sender, new ManualClock(0));
    dispatcher.enqueue([delivery('u1', 'e', 'leaving'), delivery('u2', 'e', 'resumed'), delivery('other', 'e', 'staying')]);
    dispatcher.forgetUser(1, hashUserId('leaving'), 'leaving');
    // A job resumed after a restart knows only the hash.
    dispatcher.forgetUser(1, hashUserId('resumed'));
    // Another tenant's user of the same name is not this one.
    dispatcher.forgetUser(2, hashUserId('staying'), 'staying');
    expect(dispatcher.depth).toBe(1);
    await dispatcher.runDue();
    expect(sender.sent.map((s) => s.id)).toEqual(['evt-other']);
  });

  it('forgets on recheck the deliveries the store no longer holds as pending', async () => {
    const pending = new Set(['kept', 'erased']);
    const sender = new FakeSender();
    const dispatcher = new WebhookDispatcher(fakeStore(pending), directory, sender, new ManualClock(0));
    dispatcher.enqueue([delivery('kept', 'e'), delivery('erased', 'e')]);
    pending.delete('erased');
    await dispatcher.recheck(1);
    expect(dispatcher.depth).toBe(1);
    await dispatcher.runDue();
    expect(sender.sent.map((s) => s.id)).toEqual(['evt-kept']);
  });

  it('follows erasures on the bus: forgets the user\'s deliveries when erasing and checks the store when erased', async () => {
    const pending = new Set(['u1', 'kept', 'gone']);
    const sender = new FakeSender();
    const bus = new LocalBus();
    const dispatcher = new WebhookDispatcher(fakeStore(pending), directory, sender, new ManualClock(0), undefined, undefined, bus);
    dispatcher.enqueue([delivery('u1', 'e', 'leaving'), delivery('kept', 'e'), delivery('gone', 'e')]);
    await bus.publish('user.erasing', { jobId: 'del_1', tenantSeq: 1, userHash: hashUserId('leaving'), userId: null });
    expect(dispatcher.depth).toBe(2);
    pending.delete('gone');
    await bus.publish('user.erased', { jobId: 'del_1', tenantSeq: 1, userHash: hashUserId('leaving'), userId: null });
    expect(dispatcher.depth).toBe(1);
    await dispatcher.runDue();
    expect(sender.sent.map((s) => s.id)).toEqual(['evt-kept']);
  });

  it('holds a delivery due later until the clock reaches it, and sends it once when enqueued twice', async () => {
    const clock = new ManualClock(1_000);
    const pending = new Set(['later']);
    const sender = new FakeSender();
    const dispatcher = new WebhookDispatcher(fakeStore(pending), directory, sender, clock);
    dispatcher.enqueue([{ ...delivery('later', 'e'), nextAttemptAt: 5_000 }]);
    dispatcher.enqueue([{ ...delivery('later', 'e'), nextAttemptAt: 6_000 }]);
    await dispatcher.runDue();
    expect(sender.sent).toHaveLength(0);
    clock.advance(4_500); // 5,500: the first entry was replaced by the second
    await dispatcher.runDue();
    expect(sender.sent).toHaveLength(0);
    clock.advance(500);
    await dispatcher.runDue();
    await dispatcher.runDue();
    expect(sender.sent.map((s) => s.id)).toEqual(['evt-later']);
    expect(dispatcher.depth).toBe(0);
  });
});

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Bus, BusTopics } from '../src';

/** A bus under test and how to end it (a bus between nodes holds connections). */
export interface BusUnderTest {
  bus: Bus;
  close(): Promise<void>;
}

const VOTE: BusTopics['poll.voted'] = {
  tenantSeq: 7,
  votes: [{ eventId: 'e1', sessionId: 'svc_s1', userId: null, broadcastId: 'b1', timestampMs: 1, receivedAtMs: 2, data: '{"pollId":"p1","optionIndex":0}' }],
};

/**
 * What every implementation of `Bus` promises (run on `LocalBus` and on the bus between nodes).
 * Deliveries are awaited with `vi.waitFor`, so a bus that delivers later passes as well.
 */
export function describeBusContract(name: string, open: () => Promise<BusUnderTest>): void {
  describe(`Bus contract: ${name}`, () => {
    let subject: BusUnderTest;
    beforeEach(async () => {
      subject = await open();
    });
    afterEach(async () => {
      await subject.close();
    });

    it('hands each payload, as plain data, to every subscriber of its topic and to no other topic', async () => {
      const first: unknown[] = [];
      const second: unknown[] = [];
      const other: unknown[] = [];
      subject.bus.subscribe('poll.voted', (payload) => void first.push(payload));
      subject.bus.subscribe('poll.voted', (payload) => void second.push(payload));
      subject.bus.subscribe('session.left', (payload) => void other.push(payload));
      await subject.bus.publish('poll.voted', VOTE);
      await vi.waitFor(() => expect([first, second]).toEqual([[VOTE], [VOTE]]));
      expect(JSON.parse(JSON.stringify(first[0]))).toEqual(VOTE);
      expect(other).toEqual([]);
    });

    it('delivers one topic\'s payloads in the order they were published', async () => {
      const seen: number[] = [];
      subject.bus.subscribe('events.stored', ({ tenantSeq }) => void seen.push(tenantSeq));
      for (const tenantSeq of [1, 2, 3, 4, 5]) await subject.bus.publish('events.stored', { tenantSeq });
      await vi.waitFor(() => expect(seen).toEqual([1, 2, 3, 4, 5]));
    });

    it('stops calling a handler once its subscription ended, and keeps the others', async () => {
      const ended: number[] = [];
      const kept: number[] = [];
      const end = subject.bus.subscribe('events.stored', ({ tenantSeq }) => void ended.push(tenantSeq));
      subject.bus.subscribe('events.stored', ({ tenantSeq }) => void kept.push(tenantSeq));
      await subject.bus.publish('events.stored', { tenantSeq: 1 });
      await vi.waitFor(() => expect(ended).toEqual([1]));
      end();
      await subject.bus.publish('events.stored', { tenantSeq: 2 });
      await vi.waitFor(() => expect(kept).toEqual([1, 2]));
      expect(ended).toEqual([1]);
    });

    it('settles a publish only once this node\'s handlers finished their work', async () => {
      let release!: () => void;
      const work = new Promise<void>((resolve) => (release = resolve));
      const done: string[] = [];
      subject.bus.subscribe('user.erasing', async (notice) => {
        await work;
        done.push(notice.jobId);
      });
      let settled = false;
      const publishing = subject.bus.publish('user.erasing', { jobId: 'del_1', tenantSeq: 1, userHash: 'h', userId: null }).then(() => (settled = true));
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(settled).toBe(false);
      release();
      await publishing;
      expect(done).toEqual(['del_1']);
    });

    it('rejects a publish whose handler failed, after calling every handler', async () => {
      const called: string[] = [];
      subject.bus.subscribe('user.erasing', () => {
        called.push('throws');
        throw new Error('first failed');
      });
      subject.bus.subscribe('user.erasing', async () => {
        called.push('rejects');
        throw new Error('second failed');
      });
      subject.bus.subscribe('user.erasing', () => void called.push('works'));
      await expect(subject.bus.publish('user.erasing', { jobId: 'del_2', tenantSeq: 1, userHash: 'h', userId: 'u' })).rejects.toThrow('first failed');
      expect(called).toEqual(['throws', 'rejects', 'works']);
    });

    it('settles a publish nobody subscribed to', async () => {
      await expect(subject.bus.publish('apiKey.revoked', { tenantSeq: 1, keyId: 'ak_1', key: 'svc_pk_x' })).resolves.toBeUndefined();
    });
  });
}

import { describe, expect, it, vi } from 'vitest';
import { fanOut, LocalBus } from '../src';
import { describeBusContract } from './bus-contract';

describeBusContract('LocalBus', async () => ({ bus: new LocalBus({ onSubscriberError: () => {} }), close: async () => {} }));

describe('LocalBus', () => {
  it('has called every handler when publish returns, as a direct call would', () => {
    const bus = new LocalBus();
    const seen: string[] = [];
    bus.subscribe('content.changed', ({ broadcastId }) => void seen.push(`a:${broadcastId}`));
    bus.subscribe('content.changed', ({ broadcastId }) => void seen.push(`b:${broadcastId}`));
    void bus.publish('content.changed', { tenantSeq: 1, broadcastId: 'b1', change: { kind: 'hide', overlayId: 'o1', hiddenAt: '2026-11-01T00:00:00.000Z' } });
    expect(seen).toEqual(['a:b1', 'b:b1']);
  });

  it('reports every failing subscriber, also on a publish nobody waits for', async () => {
    const reported: string[] = [];
    const bus = new LocalBus({ onSubscriberError: (error, topic) => void reported.push(`${topic}: ${(error as Error).message}`) });
    bus.subscribe('events.stored', () => {
      throw new Error('thrown');
    });
    bus.subscribe('events.stored', async () => {
      throw new Error('rejected');
    });
    fanOut(bus, 'events.stored', { tenantSeq: 1 });
    await vi.waitFor(() => expect(reported).toEqual(['events.stored: thrown', 'events.stored: rejected']));
    await expect(bus.publish('events.stored', { tenantSeq: 2 })).rejects.toThrow('thrown');
  });
});

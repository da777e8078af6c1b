import { describe, expect, it } from 'vitest';
import { LocalBus } from '../src';
import { describeBusContract } from './bus-contract';

describeBusContract('LocalBus', async () => ({ bus: new LocalBus(), close: async () => {} }));

describe('LocalBus', () => {
  it('has called every handler when publish returns, as a direct call would', () => {
    const bus = new LocalBus();
    const seen: string[] = [];
    bus.subscribe('content.changed', ({ broadcastId }) => void seen.push(`a:${broadcastId}`));
    bus.subscribe('content.changed', ({ broadcastId }) => void seen.push(`b:${broadcastId}`));
    void bus.publish('content.changed', { tenantSeq: 1, broadcastId: 'b1', change: { kind: 'hide', overlayId: 'o1', hiddenAt: '2026-11-01T00:00:00.000Z' } });
    expect(seen).toEqual(['a:b1', 'b:b1']);
  });
});

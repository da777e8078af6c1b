import { describe, expect, it } from 'vitest';
import type { AttemptOutcome, WebhookDeliveryStore } from '@svc/storage';
import { ATTEMPT_BATCH_MS, AttemptLog } from '../src/attempt-log';

const outcome: AttemptOutcome = { status: 'delivered', attempts: 1, nextAttemptAt: null, attemptedAt: 0, statusCode: 200, error: null, latencyMs: 1 };

describe('AttemptLog', () => {
  it('gathers attempts that end while a write runs into the next batch after a pause, not into one write each', async () => {
    const batches: number[] = [];
    // Each write takes 10 ms, as a busy database would.
    const store = {
      recordAttempts: async (attempts: unknown[]) => {
        batches.push(attempts.length);
        await new Promise((resolve) => setTimeout(resolve, 10));
      },
    } as Partial<WebhookDeliveryStore> as WebhookDeliveryStore;
    const log = new AttemptLog(store);
    const recorded: Promise<void>[] = [];
    // 5 attempts end every 2 ms for 300 ms.
    for (let t = 0; t < 300; t += 2) {
      for (let i = 0; i < 5; i++) recorded.push(log.record(`d-${t}-${i}`, outcome));
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    await Promise.all(recorded);
    expect(batches.reduce((sum, n) => sum + n, 0)).toBe(recorded.length);
    // About one write per 60 ms (50 ms of gathering + the write), never one per attempt or per write's length.
    expect(batches.length).toBeLessThanOrEqual(Math.ceil(300 / ATTEMPT_BATCH_MS) + 3);
    expect(Math.max(...batches)).toBeGreaterThan(50);
  });

  it('rejects the attempts of a batch whose write failed, and writes the next batch', async () => {
    let fail = true;
    const store = {
      recordAttempts: async () => {
        if (fail) {
          fail = false;
          throw new Error('disk full');
        }
      },
    } as Partial<WebhookDeliveryStore> as WebhookDeliveryStore;
    const log = new AttemptLog(store);
    await expect(log.record('a', outcome)).rejects.toThrow('disk full');
    await expect(log.record('b', outcome)).resolves.toBeUndefined();
  });
});

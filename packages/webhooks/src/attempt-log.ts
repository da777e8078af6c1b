import type { AttemptOutcome, WebhookDeliveryStore } from '@svc/storage';

/** How long attempts wait to share one write, at most. */
export const ATTEMPT_BATCH_MS = 50;

/**
 * Records delivery attempts in batches: attempts that end within 50 ms of each other share one
 * write (one transaction), and after a write the next waits 50 ms more for company, so a busy
 * endpoint costs about twenty database writes a second however many deliveries it takes, and
 * leaves the writer to ingestion. `record` resolves once its attempt is stored. A crash loses
 * the attempts not yet written: those deliveries are sent again (at-least-once, same `webhook-id`).
 */
export class AttemptLog {
  private waiting: Array<{ id: string; outcome: AttemptOutcome; done: () => void; failed: (error: unknown) => void }> = [];
  private writing: Promise<void> | null = null;

  constructor(private readonly store: Pick<WebhookDeliveryStore, 'recordAttempts'>) {}

  record(id: string, outcome: AttemptOutcome): Promise<void> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ id, outcome, done: resolve, failed: reject });
      if (!this.writing) this.writing = new Promise<void>((next) => setTimeout(next, ATTEMPT_BATCH_MS)).then(() => this.flush());
    });
  }

  private async flush(): Promise<void> {
    while (this.waiting.length) {
      const batch = this.waiting;
      this.waiting = [];
      try {
        await this.store.recordAttempts(batch.map(({ id, outcome }) => ({ id, outcome })));
        for (const entry of batch) entry.done();
      } catch (error) {
        for (const entry of batch) entry.failed(error);
      }
      // What ended during the write waits for what ends in the next moments, not for nobody.
      if (this.waiting.length) await new Promise((next) => setTimeout(next, ATTEMPT_BATCH_MS));
    }
    this.writing = null;
  }
}

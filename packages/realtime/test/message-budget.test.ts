import { describe, expect, it } from 'vitest';
import { MessageBudget, type BudgetVerdict } from '../src';

const OPTIONS = { messagesPerSecond: 10, messageBurst: 10, maxDroppedMessages: 200, maxOverRateMs: 3_000 };

/** Sends `perSecond` messages a second from `from` for `ms`; the verdicts, and when the first `close` came. */
function send(budget: MessageBudget, perSecond: number, from: number, ms: number): { verdicts: BudgetVerdict[]; closedAt: number | null } {
  const verdicts: BudgetVerdict[] = [];
  for (let at = from; at < from + ms; at += 1000 / perSecond) {
    const verdict = budget.take(at);
    verdicts.push(verdict);
    if (verdict === 'close') return { verdicts, closedAt: at };
  }
  return { verdicts, closedAt: null };
}

describe('message budget', () => {
  it('closes a client that keeps sending a little over its rate once it has been dropping for maxOverRateMs', () => {
    const budget = new MessageBudget(OPTIONS, 0);
    const { verdicts, closedAt } = send(budget, 12, 0, 20_000);
    const firstDrop = verdicts.findIndex((v) => v !== 'pass') * (1000 / 12);
    expect(closedAt).not.toBeNull();
    expect(closedAt! - firstDrop).toBeGreaterThanOrEqual(3_000);
    // Closed at the first drop after that: at 12 a second against 10, drops come every half second.
    expect(closedAt! - firstDrop).toBeLessThan(3_600);
    // Most messages still passed on the way: it is the stretch of drops, not a run of them, that counts.
    expect(verdicts.filter((v) => v === 'pass').length).toBeGreaterThan(verdicts.length / 2);
  });

  it('never closes a client at its rate, and tells a dropping client at most once a second', () => {
    const budget = new MessageBudget(OPTIONS, 0);
    expect(send(budget, 10, 0, 60_000).verdicts.every((v) => v === 'pass')).toBe(true);
    const bursty = new MessageBudget(OPTIONS, 0);
    const { verdicts } = send(bursty, 100, 0, 1_000);
    expect(verdicts.filter((v) => v === 'notify')).toHaveLength(1);
  });

  it('ends a stretch of drops after a quiet second, so short bursts now and then are only dropped', () => {
    const budget = new MessageBudget(OPTIONS, 0);
    let at = 0;
    for (let round = 0; round < 10; round++) {
      // 2.5 s of 20 messages a second, then 2 s of silence: drops, but never 3 s of them.
      const { closedAt } = send(budget, 20, at, 2_500);
      expect(closedAt).toBeNull();
      at += 4_500;
    }
  });

  it('closes a back-to-back flood after maxDroppedMessages drops', () => {
    const budget = new MessageBudget(OPTIONS, 0);
    const verdicts = Array.from({ length: 300 }, () => budget.take(5));
    expect(verdicts.indexOf('close')).toBe(10 + 200);
  });
});

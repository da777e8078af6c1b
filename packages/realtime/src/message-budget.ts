export interface MessageBudgetOptions {
  /** Sustained client messages per second. */
  messagesPerSecond: number;
  /** Messages a client may send at once before the sustained rate applies. */
  messageBurst: number;
  /** Messages dropped within one stretch of over-rate sending before the socket is closed. */
  maxDroppedMessages: number;
  /** How long a client may keep sending over its rate before the socket is closed. */
  maxOverRateMs: number;
}

/** A stretch of over-rate sending ends when no message had to be dropped for this long. */
export const OVER_RATE_QUIET_MS = 1_000;
/** At most one `rate_limited` notice per this interval. */
export const RATE_NOTICE_INTERVAL_MS = 1_000;

/**
 * What to do with one client message: `pass` it, `drop` it, drop it and `notify` the client,
 * or `close` the socket.
 */
export type BudgetVerdict = 'pass' | 'drop' | 'notify' | 'close';

/**
 * A connection's message budget: a token bucket, and a watch on stretches of over-rate
 * sending. A stretch starts with the first dropped message and lasts while messages keep being
 * dropped less than `OVER_RATE_QUIET_MS` apart; one that goes on for `maxOverRateMs`, or drops
 * `maxDroppedMessages`, closes the socket. A client that sends steadily over its rate
 * therefore is closed too, not only one that floods back to back (whose few messages that
 * pass would otherwise start it afresh).
 */
export class MessageBudget {
  private tokens: number;
  private tokensAt: number;
  private stretchStartedAt: number | null = null;
  private lastDropAt = 0;
  private droppedInStretch = 0;
  private lastNoticeAt = -Infinity;

  constructor(
    private readonly options: MessageBudgetOptions,
    now: number,
  ) {
    this.tokens = options.messageBurst;
    this.tokensAt = now;
  }

  /** Sustained messages per second this budget allows. */
  get messagesPerSecond(): number {
    return this.options.messagesPerSecond;
  }

  take(now: number): BudgetVerdict {
    const { messagesPerSecond, messageBurst, maxDroppedMessages, maxOverRateMs } = this.options;
    this.tokens = Math.min(messageBurst, this.tokens + ((now - this.tokensAt) / 1000) * messagesPerSecond);
    this.tokensAt = now;
    const stretchOver = this.stretchStartedAt === null || now - this.lastDropAt >= OVER_RATE_QUIET_MS;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      if (stretchOver) this.stretchStartedAt = null;
      return 'pass';
    }
    if (stretchOver) {
      this.stretchStartedAt = now;
      this.droppedInStretch = 0;
    }
    this.lastDropAt = now;
    this.droppedInStretch++;
    if (this.droppedInStretch > maxDroppedMessages || now - this.stretchStartedAt! >= maxOverRateMs) return 'close';
    if (now - this.lastNoticeAt < RATE_NOTICE_INTERVAL_MS) return 'drop';
    this.lastNoticeAt = now;
    return 'notify';
  }
}

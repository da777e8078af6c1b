import type { Bus, BusHandler } from './bus';
import type { BusTopic, BusTopics } from './bus-topics';

const SETTLED: Promise<void> = Promise.resolve();

export interface LocalBusOptions {
  /**
   * Told of every subscriber's failure (a throw or a rejected promise), whether or not the
   * publisher waits: fan-out publishers do not look at failures, so without this nobody would
   * hear of them. Default: written to stderr.
   */
  onSubscriberError?: (error: unknown, topic: BusTopic) => void;
}

/**
 * The bus inside one process (the embedded default). Fan-out is synchronous: every subscriber
 * has been called, in the order they subscribed, when `publish` returns, so notifications keep
 * the timing of direct calls. A subscriber that throws does not keep the others from being called.
 */
export class LocalBus implements Bus {
  private readonly handlers = new Map<BusTopic, Set<BusHandler<never>>>();
  private readonly onSubscriberError: (error: unknown, topic: BusTopic) => void;

  constructor(options: LocalBusOptions = {}) {
    this.onSubscriberError = options.onSubscriberError ?? ((error, topic) => console.error(`a subscriber of ${topic} failed:`, error));
  }

  publish<T extends BusTopic>(topic: T, payload: BusTopics[T]): Promise<void> {
    const handlers = this.handlers.get(topic) as Set<BusHandler<T>> | undefined;
    if (!handlers) return SETTLED;
    let pending: Array<void | Promise<void>> | null = null;
    for (const handler of handlers) {
      let outcome: void | Promise<void>;
      try {
        outcome = handler(payload);
      } catch (error) {
        outcome = Promise.reject(error);
      }
      if (outcome) (pending ??= []).push(outcome.catch((error: unknown) => this.failed(error, topic)));
    }
    return pending ? settleAll(pending) : SETTLED;
  }

  /** Reports a subscriber's failure, then passes it on to the publisher. */
  private failed(error: unknown, topic: BusTopic): never {
    try {
      this.onSubscriberError(error, topic);
    } catch {
      // A failing reporter must not hide the failure from the publisher.
    }
    throw error;
  }

  subscribe<T extends BusTopic>(topic: T, handler: BusHandler<T>): () => void {
    let set = this.handlers.get(topic);
    if (!set) this.handlers.set(topic, (set = new Set()));
    set.add(handler as BusHandler<never>);
    return () => {
      set.delete(handler as BusHandler<never>);
      if (!set.size && this.handlers.get(topic) === set) this.handlers.delete(topic);
    };
  }
}

/** Waits for all, then rejects with the first failure (in subscription order) if any. */
async function settleAll(pending: Array<void | Promise<void>>): Promise<void> {
  const outcomes = await Promise.allSettled(pending);
  for (const outcome of outcomes) if (outcome.status === 'rejected') throw outcome.reason;
}

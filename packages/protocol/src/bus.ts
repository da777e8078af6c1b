import type { BusTopic, BusTopics } from './bus-topics';

/** What a subscriber does with a payload; a returned promise is what `publish` waits for. */
export type BusHandler<T extends BusTopic> = (payload: BusTopics[T]) => void | Promise<void>;

/**
 * The one backbone for "something happened" inside the service, typed by `BusTopics` (each
 * topic documents its payload, publishers, subscribers and delivery guarantee). Publishers
 * publish; each subscriber attaches itself inside its own package; the composition root builds
 * one bus and hands it to all.
 *
 * The interface and the in-process implementation (`LocalBus`) live in packages/protocol
 * because every package already depends on it and both are pure (no I/O); a bus between nodes
 * (NATS) lives with the other engines' code and implements this interface.
 */
export interface Bus {
  /**
   * Hands `payload` to every subscriber of `topic`. The promise settles once this node's
   * subscribers settled (those of other nodes are not awaited), and rejects with the first
   * failure among them. Publishers of fan-out topics need not wait, but must catch.
   */
  publish<T extends BusTopic>(topic: T, payload: BusTopics[T]): Promise<void>;
  /** Calls `handler` with each payload published on `topic`; returns the function that ends the subscription. */
  subscribe<T extends BusTopic>(topic: T, handler: BusHandler<T>): () => void;
}

/**
 * Publishes on a fan-out topic without waiting. The publisher does not depend on its
 * subscribers: a subscriber's failure is its own to report, not the publisher's.
 */
export function fanOut<T extends BusTopic>(bus: Bus, topic: T, payload: BusTopics[T]): void {
  bus.publish(topic, payload).catch(() => undefined);
}

import { connect, type NatsConnection } from '@nats-io/transport-node';
import { BUS_SUBJECT_PREFIX } from '@svc/storage';
import type { BusCounter } from './fanout-side';

/**
 * Counts the messages of the bus between nodes (full cluster mode's core-NATS subjects
 * `svc.bus.<topic>`) as one more subscriber on the cluster's NATS server sees them: one message
 * published by a node is one message here, whatever the number of nodes it reaches. Keyed by
 * topic (the subject without its prefix).
 */
export class NatsBusCounter implements BusCounter {
  private readonly counts = new Map<string, number>();
  /** Payload bytes of the largest message seen per topic. */
  readonly largestBytes = new Map<string, number>();

  private constructor(private readonly connection: NatsConnection) {
    connection.subscribe(`${BUS_SUBJECT_PREFIX}>`, {
      callback: (error, message) => {
        if (error) return;
        const topic = message.subject.slice(BUS_SUBJECT_PREFIX.length);
        this.counts.set(topic, (this.counts.get(topic) ?? 0) + 1);
        this.largestBytes.set(topic, Math.max(this.largestBytes.get(topic) ?? 0, message.data.length));
      },
    });
  }

  static async open(url: string): Promise<NatsBusCounter> {
    const counter = new NatsBusCounter(await connect({ servers: url, name: 'bench-bus-counter' }));
    await counter.flush();
    return counter;
  }

  snapshot(): Map<string, number> {
    return new Map(this.counts);
  }

  /** A round trip to the server: what it had sent this subscriber before has arrived. */
  flush(): Promise<void> {
    return this.connection.flush();
  }

  close(): Promise<void> {
    return this.connection.close();
  }
}

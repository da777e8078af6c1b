import { connect, type NatsConnection } from '@nats-io/transport-node';
import { BUS_SUBJECT_PREFIX, CLAIMS_BUCKET, EVENTS_SUBJECT_PREFIX } from '@svc/storage';
import type { BusCounter } from './fanout-side';

/** The key of the event log's JetStream messages among the counts (not a bus topic). */
export const EVENT_LOG_KEY = 'event log (JetStream)';
/** The key of the claims' KV writes among the counts (not a bus topic). */
export const CLAIMS_KEY = 'claims (JetStream KV)';

/**
 * Counts the messages of the bus between nodes (full cluster mode's core-NATS subjects
 * `svc.bus.<topic>`) as one more subscriber on the cluster's NATS server sees them: one message
 * published by a node is one message here, whatever the number of nodes it reaches. Keyed by
 * topic (the subject without its prefix). Also counts the event log's JetStream messages
 * (`svc.events.<tenant>`, one per ingest request or chunk of one) under `EVENT_LOG_KEY`, and
 * the claims' KV writes (`$KV.svc_claims.<key>`: a create per claim, a delete per release) under
 * `CLAIMS_KEY`.
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
    for (const [subject, key] of [
      [`${EVENTS_SUBJECT_PREFIX}.>`, EVENT_LOG_KEY],
      [`$KV.${CLAIMS_BUCKET}.>`, CLAIMS_KEY],
    ] as const) {
      connection.subscribe(subject, {
        callback: (error) => {
          if (!error) this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
        },
      });
    }
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

import { randomUUID } from 'node:crypto';
import { headers, type Msg, type MsgHdrs, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { BUS_TOPICS_ACROSS_NODES, LocalBus, payloadForOtherNodes, type Bus, type BusHandler, type BusTopic, type BusTopics } from '@svc/protocol';

/** Core-NATS subjects of the bus: `svc.bus.<topic>` (not under `svc.events.`: no stream keeps them). */
export const BUS_SUBJECT_PREFIX = 'svc.bus.';

/**
 * Header naming the bus that published a message (its body is the payload as JSON): a node
 * drops its own messages, which the server sends back, without parsing them.
 */
export const BUS_ORIGIN_HEADER = 'Svc-Bus-Origin';

export interface NatsBusOptions {
  /** Tells this bus's own messages from other nodes' ones; default a random UUID per bus (two nodes never share one, even with one SVC_NODE_ID). */
  origin?: string;
  /** A message that could not be sent, one from another node that was dropped (malformed), or a subscriber's failure on one. Default: stderr. */
  onError?: (error: unknown) => void;
}

/**
 * The bus of full cluster mode: this node's subscribers are called as `LocalBus` calls them
 * (synchronously, and `publish` settles once they settled), and a topic that crosses nodes
 * (`BUS_TOPICS_ACROSS_NODES`) is also published as JSON on the core-NATS subject
 * `svc.bus.<topic>` (origin in the header `BUS_ORIGIN_HEADER`), which every other node's bus
 * hands to its own subscribers, once.
 *
 * At most once: core NATS keeps nothing. A node subscribes to a topic's subject while it has
 * subscribers of the topic; the client subscribes again by itself after a reconnect, but what
 * was published meanwhile may be lost for the nodes cut off. What a lost message would have told is
 * recovered from the stores: a viewer's `welcome` (sent on every reconnect) carries the active
 * overlays and current results, the dashboard reads again, erasures are also in the deletion
 * jobs (and the erasure tombstones, read every second).
 *
 * The node's own messages come back from the server (the connection is shared, so no `noEcho`)
 * and are dropped by their origin header, unparsed. A payload from another node is checked for its topic's shape
 * before subscribers see it; a malformed one is reported and dropped.
 */
export class NatsBus implements Bus {
  /** This node's subscribers; each failure among them is reported (on any publish, from this node or another). */
  private readonly local = new LocalBus({ onSubscriberError: (error) => this.report(error) });
  private readonly origin: string;
  private readonly originHeaders: MsgHdrs;
  private readonly report: (error: unknown) => void;
  /** The subjects this node listens to, with how many subscribers of their topic it has. */
  private readonly listening = new Map<BusTopic, { subscribers: number; subscription: Subscription }>();
  private closed = false;

  constructor(
    private readonly connection: NatsConnection,
    options: NatsBusOptions = {},
  ) {
    this.origin = options.origin ?? randomUUID();
    this.originHeaders = headers();
    this.originHeaders.set(BUS_ORIGIN_HEADER, this.origin);
    this.report = options.onError ?? ((error) => console.error('bus between nodes:', error));
  }

  publish<T extends BusTopic>(topic: T, payload: BusTopics[T]): Promise<void> {
    // Sent before the local subscribers run, as it was handed over (a subscriber cannot change it).
    if (BUS_TOPICS_ACROSS_NODES[topic]) this.send(topic, payloadForOtherNodes(topic, payload));
    return this.local.publish(topic, payload);
  }

  subscribe<T extends BusTopic>(topic: T, handler: BusHandler<T>): () => void {
    const end = this.local.subscribe(topic, handler);
    if (!BUS_TOPICS_ACROSS_NODES[topic] || this.closed) return end;
    this.listen(topic);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      end();
      this.unlisten(topic);
    };
  }

  /** Resolves once the server has every subscription made so far (another node's message published after it reaches this one). */
  async flush(): Promise<void> {
    if (!this.connection.isClosed()) await this.connection.flush();
  }

  /** Stops listening to other nodes; this node's subscribers keep working. The connection stays open (it is not the bus's). */
  close(): void {
    this.closed = true;
    for (const { subscription } of this.listening.values()) subscription.unsubscribe();
    this.listening.clear();
  }

  private send(topic: BusTopic, payload: unknown): void {
    if (this.closed || this.connection.isClosed()) return;
    try {
      this.connection.publish(BUS_SUBJECT_PREFIX + topic, JSON.stringify(payload), { headers: this.originHeaders });
    } catch (error) {
      this.report(new Error(`The bus could not send ${topic} to the other nodes: ${(error as Error).message}`, { cause: error }));
    }
  }

  private listen(topic: BusTopic): void {
    const known = this.listening.get(topic);
    if (known) {
      known.subscribers++;
      return;
    }
    const subscription = this.connection.subscribe(BUS_SUBJECT_PREFIX + topic, {
      callback: (error, message) => {
        if (error) this.report(error);
        else this.receive(topic, message);
      },
    });
    this.listening.set(topic, { subscribers: 1, subscription });
  }

  private unlisten(topic: BusTopic): void {
    const known = this.listening.get(topic);
    if (!known || --known.subscribers > 0) return;
    known.subscription.unsubscribe();
    this.listening.delete(topic);
  }

  private receive(topic: BusTopic, message: Msg): void {
    const origin = message.headers?.get(BUS_ORIGIN_HEADER);
    if (!origin) {
      this.report(new Error(`The bus dropped a message on ${message.subject} that is not a bus message (no ${BUS_ORIGIN_HEADER} header).`));
      return;
    }
    if (origin === this.origin) return;
    let payload: unknown;
    try {
      payload = message.json();
    } catch {
      this.report(new Error(`The bus dropped a ${topic} message from node ${origin} that is not JSON.`));
      return;
    }
    if (!BUS_TOPICS_ACROSS_NODES[topic]?.(payload)) {
      this.report(new Error(`The bus dropped a ${topic} message from node ${origin}: its payload does not have the topic's shape.`));
      return;
    }
    // A subscriber's failure is reported by `local`.
    this.local.publish(topic, payload as BusTopics[typeof topic]).catch(() => undefined);
  }
}

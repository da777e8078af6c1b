import { JetStreamApiError, jetstream } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';

/** How long creating (or finding) a bucket at start-up may take, ms (replicas are placed then). */
const BUCKET_OPEN_TIMEOUT_MS = 10_000;
/** Attempts at creating a bucket that other nodes are creating at the same moment. */
const CREATE_ATTEMPTS = 5;
/**
 * JetStream's answers to a stream created while another node creates the same one: "subjects
 * overlap with an existing stream" (10065) and "stream name already in use" (10058), until the
 * other node's stream is there to be found.
 */
const CREATED_ELSEWHERE_CODES = new Set([10065, 10058]);

export interface KvBucketOptions {
  /** Replicas of the bucket's stream (1 on one NATS server, 3 in production). */
  replicas: number;
  /** The bucket's max age, ms. Fixed when the bucket is created. */
  ttlMs: number;
  /** How long each request of the returned handle may take, ms. */
  timeoutMs: number;
}

/**
 * A JetStream KV bucket of the cluster, one revision kept per key: created by the first node
 * that opens it (several nodes starting together each try, and all end up on the one bucket),
 * then opened with a client whose requests time out after `timeoutMs` (`Kvm`'s own `timeout`
 * option is not used by the client: the JetStream context's is).
 */
export async function openKvBucket(connection: NatsConnection, name: string, options: KvBucketOptions): Promise<KV> {
  const creator = new Kvm(jetstream(connection, { timeout: BUCKET_OPEN_TIMEOUT_MS }));
  for (let attempt = 1; ; attempt++) {
    try {
      await creator.create(name, { replicas: options.replicas, history: 1, ttl: options.ttlMs });
      break;
    } catch (error) {
      const createdElsewhere = error instanceof JetStreamApiError && CREATED_ELSEWHERE_CODES.has(error.code);
      if (!createdElsewhere || attempt >= CREATE_ATTEMPTS) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
    }
  }
  return new Kvm(jetstream(connection, { timeout: options.timeoutMs })).open(name, { timeout: options.timeoutMs });
}

import type { ExportTextFormat, ExportTextOptions, StoredEvent } from '@svc/protocol';
import {
  eventKey,
  type CommitBatch,
  type CommitOutcome,
  type EventFilter,
  type EventPageRequest,
  type EventStore,
  type QuarantinedEvent,
} from '../event-store';
import { chunkEntries } from './event-log-chunks';
import type { EventLog } from './event-log';
import { RecentKeys, unseenEvents } from '../recent-keys';

/** Event keys a node remembers as stored, per generation (two generations are kept). */
export const RECENT_EVENT_KEYS_PER_GENERATION = 500_000;

/**
 * Events in cluster mode: a commit publishes the batch to the stream EVENTS and resolves once
 * every message of it has its PubAck, which makes it the acknowledgement point of ingest; the
 * writer (EventLogWriter) moves it into the reads' store later. When JetStream cannot be
 * reached or does not answer in time, the commit rejects with `storage_unavailable` and the
 * request is acknowledged to nobody. Reads go to `reads` (ClickHouse's store): they see an
 * event once the writer has stored it, about a second (WRITER_BATCH_WAIT_MS and the insert)
 * after its acknowledgement, or later while the writer catches up.
 *
 * `inserted` is every event of the batch neither in this node's recent-ids cache nor in a
 * message the stream already had (a duplicate PubAck): a batch retried on any node within the
 * stream's duplicate window counts as stored once. Duplicates the cache and the stream miss
 * (a retried batch grouped differently, or after the window) are dropped by the sink's
 * ReplacingMergeTree; reads are correct with them unmerged.
 */
export class JetStreamEventStore implements EventStore {
  private readonly recent: RecentKeys;

  constructor(
    private readonly log: EventLog,
    private readonly reads: EventStore,
    /** Default RECENT_EVENT_KEYS_PER_GENERATION. */
    recentKeysPerGeneration = RECENT_EVENT_KEYS_PER_GENERATION,
  ) {
    this.recent = new RecentKeys(recentKeysPerGeneration);
  }

  async commit(batch: CommitBatch): Promise<CommitOutcome> {
    const { events, keys, unseen: candidates } = unseenEvents(batch, this.recent);
    const deliveries = (batch.deliveries ?? []).filter((d) => candidates.has(eventKey(d.tenantSeq, d.eventId)));
    if (!events.length && !batch.rejects.length) return { inserted: new Set() };
    const chunks = chunkEntries({ events, keys, rejects: batch.rejects, deliveries }, this.log.maxBodyBytes);
    const acks = await Promise.all(chunks.map((chunk) => this.log.publish(chunk)));
    for (const chunk of chunks) for (const id of chunk.ids) this.recent.add(chunk.tenantSeq, id);
    // The chunks hold every candidate: with no duplicate PubAck, the candidates are what was inserted.
    if (acks.every((ack) => !ack.duplicate)) return { inserted: candidates };
    const inserted = new Set<string>();
    chunks.forEach((chunk, i) => {
      if (!acks[i]!.duplicate) for (const key of chunk.keys) inserted.add(key);
    });
    return { inserted };
  }

  queryEvents(filter: EventFilter, page: EventPageRequest): Promise<StoredEvent[]> {
    return this.reads.queryEvents(filter, page);
  }

  streamEventText(filter: EventFilter, format: ExportTextFormat, options?: ExportTextOptions): AsyncIterable<string> {
    return this.reads.streamEventText(filter, format, options);
  }

  countEvents(filter: EventFilter): Promise<number> {
    return this.reads.countEvents(filter);
  }

  purgeEventsBefore(tenantSeq: number, cutoffMs: number): Promise<number> {
    return this.reads.purgeEventsBefore(tenantSeq, cutoffMs);
  }

  purgeRejectedBefore(cutoffMs: number): Promise<number> {
    return this.reads.purgeRejectedBefore(cutoffMs);
  }

  listRejected(tenantSeq: number, options: { limit: number; after?: { receivedAtMs: number; id: string } }): Promise<QuarantinedEvent[]> {
    return this.reads.listRejected(tenantSeq, options);
  }
}

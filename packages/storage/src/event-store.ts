import type { StoredEvent } from '@svc/protocol';
import type { EventRow, QuarantineRow } from './records';

export interface CommitBatch {
  events: EventRow[];
  rejects: QuarantineRow[];
}

export interface CommitOutcome {
  /** `${tenantSeq}:${eventId}` of every event this commit stored; the others were already there. */
  inserted: Set<string>;
}

export interface EventPageRequest {
  limit: number;
  /** Continue after this (timestamp, eventId) position. */
  after?: { timestampMs: number; eventId: string };
}

export interface QuarantinedEvent {
  id: string;
  receivedAt: string;
  code: string;
  detail: string;
  errors: unknown[];
  event: string | null;
  payload: unknown;
}

/**
 * Where events live. `commit` is durable when it resolves: it is the acknowledgement point
 * of the ingest pipeline. Duplicate event ids (per tenant) are skipped, not errors.
 */
export interface EventStore {
  commit(batch: CommitBatch): Promise<CommitOutcome>;
  listEvents(tenantSeq: number, page: EventPageRequest): Promise<StoredEvent[]>;
  countEvents(tenantSeq: number): Promise<number>;
  /** Newest first; `after` continues a listing below the last (receivedAt, id) it returned. */
  listRejected(tenantSeq: number, options: { limit: number; after?: { receivedAtMs: number; id: string } }): Promise<QuarantinedEvent[]>;
}

export function eventKey(tenantSeq: number, eventId: string): string {
  return `${tenantSeq}:${eventId.toLowerCase()}`;
}

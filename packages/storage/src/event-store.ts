import type { ExportTextFormat, ExportTextOptions, StoredEvent } from '@svc/protocol';
import type { EventRow, QuarantineRow } from './records';

export interface CommitBatch {
  events: EventRow[];
  /** `eventKey` of each event, in the same order, when the caller has them already. */
  keys?: string[];
  rejects: QuarantineRow[];
  /**
   * Webhook deliveries of these events. Only those whose event is stored by this commit are
   * written, in the same transaction: an accepted event never lacks its deliveries.
   */
  deliveries?: NewDelivery[];
}

/** A webhook delivery to record with its event. */
export interface NewDelivery {
  id: string;
  tenantSeq: number;
  endpointId: string;
  eventId: string;
  event: string;
  userId: string | null;
  payload: string;
  createdAt: number;
}

export interface CommitOutcome {
  /** `${tenantSeq}:${eventId}` of every event this commit stored; the others were already there. */
  inserted: Set<string>;
}

export interface EventPosition {
  timestampMs: number;
  eventId: string;
}

/** `asc`: oldest first (the export order); `desc`: newest first, as a viewer reads a log. */
export type EventOrder = 'asc' | 'desc';

export interface EventPageRequest {
  limit: number;
  /** Continue after this (timestamp, eventId) position, in the page's order. */
  after?: EventPosition;
  /** Default `asc`: (timestamp, eventId) ascending; `desc` reverses both. */
  order?: EventOrder;
}

/** Which events of one tenant a read selects. Every field narrows; all are optional but the tenant. */
export interface EventFilter {
  tenantSeq: number;
  campaignId?: number;
  /** Event time from (inclusive), epoch ms. */
  fromMs?: number;
  /** Event time up to (exclusive), epoch ms. */
  toMs?: number;
  broadcastId?: string;
  userId?: string;
  /** Matches the commerce `sponsorId` and the `sponsorId` of sponsor-moment data. */
  sponsorId?: string;
  country?: string;
  events?: string[];
  /** Only events received up to (inclusive) this time: keeps a paged export stable while ingest goes on. */
  receivedUpToMs?: number;
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
  /** One page in (timestamp, eventId) order, ascending unless `page.order` is `desc`. */
  queryEvents(filter: EventFilter, page: EventPageRequest): Promise<StoredEvent[]>;
  /**
   * Every matching event in (timestamp, eventId) order as export text (NDJSON lines or CSV
   * records without the header), a chunk at a time, in constant memory. The text is made by
   * the database: each event's line equals what `toExportRecord` and JSON.stringify, or the
   * CSV column list of DESIGN 5.3, give for it.
   */
  streamEventText(filter: EventFilter, format: ExportTextFormat, options?: ExportTextOptions): AsyncIterable<string>;
  countEvents(filter: EventFilter): Promise<number>;
  /** Removes events whose time is before `cutoffMs`; returns how many. */
  purgeEventsBefore(tenantSeq: number, cutoffMs: number): Promise<number>;
  /**
   * Removes quarantined rejects (all tenants) received before `cutoffMs`, and events set aside as
   * undecodable before it; returns how many.
   */
  purgeRejectedBefore(cutoffMs: number): Promise<number>;
  /** Newest first; `after` continues a listing below the last (receivedAt, id) it returned. */
  listRejected(tenantSeq: number, options: { limit: number; after?: { receivedAtMs: number; id: string } }): Promise<QuarantinedEvent[]>;
}

export function eventKey(tenantSeq: number, eventId: string): string {
  return `${tenantSeq}:${eventId.toLowerCase()}`;
}

import type { CommerceEventName, EventName } from './event-names';

/** One line of a commerce event's `items`. Prices are in major units of `currency`. */
export interface LineItem {
  productId: string;
  name?: string;
  quantity: number;
  unitPrice: number;
  currency: string;
}

/** An event as a sender submits it (spec 2.1 plus the optional `eventId`). */
export interface IncomingEvent {
  event: EventName;
  eventId?: string;
  userId?: string | null;
  sessionId: string;
  broadcastId: string;
  campaignId?: number;
  timestamp: string;
  data: Record<string, unknown>;
  orderId?: string | null;
  sponsorId?: string | null;
  items?: LineItem[];
  total?: number;
  /** Only honoured from server-to-server (admin token) senders, whose IP says nothing of the viewer. */
  country?: string | null;
}

/** An event as it is stored, exported and forwarded (spec 2.1 plus eventId, receivedAt, country). */
export interface StoredEvent {
  eventId: string;
  event: EventName;
  userId: string | null;
  sessionId: string;
  broadcastId: string;
  campaignId: number;
  timestamp: string;
  receivedAt: string;
  country: string | null;
  data: Record<string, unknown>;
  orderId: string | null;
  sponsorId: string | null;
  items: LineItem[] | null;
  total: number | null;
}

export type CommerceEvent = StoredEvent & { event: CommerceEventName };

/** Body of `POST /v1/events` when it carries a batch. */
export interface EventBatch {
  sentAt?: string;
  events: unknown[];
}

/** Answer of `POST /v1/events`. */
export interface IngestResult {
  accepted: number;
  duplicates: number;
  rejected: RejectedEvent[];
}

export interface RejectedEvent {
  index: number;
  code: string;
  detail: string;
  errors?: FieldError[];
}

export interface FieldError {
  path: string;
  code: string;
  message: string;
}

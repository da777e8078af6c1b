import { uuidv7 } from 'uuidv7';
import {
  checkTimestamp,
  correctClockSkew,
  detectPii,
  redactText,
  USER_ID_MAX_LENGTH,
  isCommerceEvent,
  MAX_EVENT_DEPTH,
  nestsDeeperThan,
  parseTimeIdCursor,
  pollVoteProblem,
  SvcError,
  systemClock,
  type Clock,
  type IncomingEvent,
  type IngestResult,
  type KnownPolls,
  type LineItem,
  type RejectedEvent,
  type Bus,
} from '@svc/protocol';
import {
  eventKey,
  type EventRow,
  type EventStore,
  type MetaStore,
  type MetadataChangeFeed,
  type NewDelivery,
  type QuarantinedEvent,
  type QuarantineRow,
  type Tenant,
} from '@svc/storage';
import { EventValidator } from './event-validator';
import type { GroupCommitter } from './group-committer';
import { quarantinePayload, tooDeepQuarantinePayload } from './quarantine-payload';
import { announceStored } from './stored-event-notices';

/** Limits of DESIGN section 6 (Segment's figures). */
export const MAX_EVENT_BYTES = 32 * 1024;
export const MAX_REQUEST_BYTES = 512 * 1024;
export const MAX_EVENTS_PER_REQUEST = 500;
const BROADCAST_CACHE_MAX_ENTRIES = 100_000;

const TOO_DEEP_DETAIL = `The event nests objects or arrays more than ${MAX_EVENT_DEPTH} levels deep.`;
const TOO_DEEP = {
  code: 'validation_failed',
  detail: TOO_DEEP_DETAIL,
  errors: [{ path: '', code: 'invalid_value', message: `nests more than ${MAX_EVENT_DEPTH} levels deep` }],
} as const satisfies { code: RejectedEvent['code']; detail: string; errors: NonNullable<RejectedEvent['errors']> };

/** Who sent the events: an SDK with a public key, or a customer server with an admin token. */
export type EventSource = 'client' | 'server';

export interface IngestRequest {
  tenant: Tenant;
  source: EventSource;
  /** Viewer country derived from the request (header, IP or fallback). */
  country: string | null;
  /** The parsed body: one event, or `{ sentAt, events }`. */
  body: unknown;
  /** Size of the raw body; per-event sizes are only measured when it could exceed the limit. */
  bodyBytes: number;
  /**
   * When the service took the events in, when earlier than now: the WebSocket gateway's own
   * writes (votes, entries) wait while its request before is under way, and a vote taken before
   * its poll closed must not be refused for the wait. Set by the service only, never from a request.
   */
  receivedAtMs?: number;
}

export interface IngestObserver {
  accepted(source: EventSource, count: number): void;
  duplicates(count: number): void;
  rejected(code: string): void;
}

const NO_OBSERVER: IngestObserver = { accepted: () => {}, duplicates: () => {}, rejected: () => {} };

/** Where accepted events are forwarded (webhooks): deliveries are planned before the commit and written with it. */
export interface DeliveryRouter {
  plan(tenant: Tenant, rows: EventRow[]): NewDelivery[];
  /** The deliveries whose events this commit stored. */
  accepted(deliveries: NewDelivery[]): void;
}

interface ValidEvent {
  index: number;
  row: EventRow;
}

/**
 * The ingest pipeline: validate → correct clock skew → enrich → resolve campaign → group
 * commit (events and quarantined rejects in one durable transaction) → answer.
 */
export class IngestService {
  private readonly validator = new EventValidator();
  private readonly broadcastCampaigns = new Map<string, number>();

  constructor(
    private readonly meta: MetaStore,
    private readonly events: EventStore,
    private readonly committer: GroupCommitter,
    private readonly clock: Clock = systemClock,
    private readonly observer: IngestObserver = NO_OBSERVER,
    private readonly router: DeliveryRouter | null = null,
    /** The service's polls: a vote on one of them must match it (checked in memory, per event). */
    private readonly polls: KnownPolls | null = null,
    /**
     * Where stored events are announced (`announceStored`) and from where broadcast changes
     * and erasures are followed; none by default.
     */
    private readonly bus: Bus | null = null,
    /**
     * Whether this node's commit makes events readable (default true); false when a writer
     * stores them from the event log and announces `events.stored` itself.
     */
    private readonly commitMakesReadable = true,
  ) {
    // A moved broadcast's campaign is read again.
    bus?.subscribe('broadcast.registered', ({ tenantSeq, broadcastId }) => this.forgetBroadcast(tenantSeq, broadcastId));
    // What was sent before an erasure (over HTTP or a socket) is stored before it runs: nothing
    // with the userId is written after it.
    bus?.subscribe('user.erasing', async () => {
      await this.settled();
      await this.committer.settled();
    });
  }

  /** Ingest calls under way (see `settled`). */
  private readonly inFlight = new Set<Promise<unknown>>();

  ingest(request: IngestRequest): Promise<IngestResult> {
    const call = this.ingestNow(request);
    this.inFlight.add(call);
    void call.catch(() => undefined).finally(() => this.inFlight.delete(call));
    return call;
  }

  /**
   * Resolves once every ingest call under way at the time of the call has ended, its events
   * committed or refused: an erasure waits for this, so that no event sent before it is written after it.
   */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
  }

  private async ingestNow(request: IngestRequest): Promise<IngestResult> {
    const receivedAt = Math.min(this.clock.now(), request.receivedAtMs ?? Infinity);
    const { events, sentAtMs } = unpackBody(request.body);
    const valid: ValidEvent[] = [];
    const rejected: RejectedEvent[] = [];
    const rejects: QuarantineRow[] = [];
    const measure = request.bodyBytes > MAX_EVENT_BYTES;

    events.forEach((raw, index) => {
      // Checked before anything serializes or walks the event: JSON.stringify recurses and
      // overflows the stack on a value nested a few thousand levels deep.
      const tooDeep = nestsDeeperThan(raw, MAX_EVENT_DEPTH);
      const bytes = tooDeep ? 0 : measure ? Buffer.byteLength(JSON.stringify(raw) ?? '') : request.bodyBytes;
      const outcome = tooDeep ? TOO_DEEP : this.check(raw, request, receivedAt, sentAtMs, bytes);
      if ('row' in outcome) {
        valid.push({ index, row: outcome.row });
        return;
      }
      rejected.push({ index, code: outcome.code, detail: outcome.detail, ...(outcome.errors.length ? { errors: outcome.errors } : {}) });
      rejects.push({
        tenantSeq: request.tenant.seq,
        id: uuidv7(),
        receivedAtMs: receivedAt,
        code: outcome.code,
        detail: outcome.detail,
        errors: JSON.stringify(outcome.errors),
        eventName: quarantinedEventName(raw),
        userId: safeUserId(raw),
        payload: tooDeep ? tooDeepQuarantinePayload(raw) : quarantinePayload(raw, bytes),
      });
      this.observer.rejected(outcome.code);
    });

    await this.assignCampaigns(request.tenant, valid, receivedAt);
    const rows = valid.map((v) => v.row);
    // One key per event (building and hashing them is a visible part of the ingest CPU).
    const keys = rows.map((row) => eventKey(row.tenantSeq, row.eventId));
    // An event repeated inside the request is forwarded once.
    const byKey = new Map<string, EventRow>();
    rows.forEach((row, i) => byKey.has(keys[i]!) || byKey.set(keys[i]!, row));
    const distinct = [...byKey.values()];
    const deliveries = this.router && distinct.length ? this.router.plan(request.tenant, distinct) : [];
    const inserted = await this.committer.submit({ events: rows, keys, rejects, deliveries });
    // `inserted` holds keys of this request only: as many as its distinct events means all of them
    // (the common case, spared a lookup per event).
    const all = inserted.size === byKey.size;
    if (deliveries.length) this.router!.accepted(all ? deliveries : deliveries.filter((d) => inserted.has(eventKey(d.tenantSeq, d.eventId))));
    if (this.bus && inserted.size) {
      let stored = distinct;
      if (!all) {
        stored = [];
        for (const [key, row] of byKey) if (inserted.has(key)) stored.push(row);
      }
      announceStored(this.bus, request.tenant.seq, request.source, stored, this.commitMakesReadable);
    }
    let accepted = all ? byKey.size : 0;
    // delete() so that an event repeated inside one request counts once, the repeat as a duplicate.
    if (!all) for (const key of keys) if (inserted.delete(key)) accepted++;
    const duplicates = valid.length - accepted;
    this.observer.accepted(request.source, accepted);
    if (duplicates) this.observer.duplicates(duplicates);
    return { accepted, duplicates, rejected };
  }

  private check(
    raw: unknown,
    request: IngestRequest,
    receivedAt: number,
    sentAtMs: number | undefined,
    bytes: number,
  ): { row: EventRow } | { code: RejectedEvent['code']; detail: string; errors: NonNullable<RejectedEvent['errors']> } {
    if (bytes > MAX_EVENT_BYTES) {
      return { code: 'event_too_large', detail: `The event is ${bytes} bytes; the limit is ${MAX_EVENT_BYTES}.`, errors: [] };
    }
    const verdict = this.validator.validate(raw);
    if (!verdict.ok) return { code: verdict.code, detail: verdict.detail, errors: verdict.errors };
    const event = raw as RawEvent;
    const parsed = Date.parse(event.timestamp);
    if (Number.isNaN(parsed)) {
      // RFC 3339 allows what Date cannot represent, such as a leap second.
      const detail = 'The timestamp is not a representable ISO 8601 date-time.';
      return { code: 'invalid_value', detail, errors: [{ path: '/timestamp', code: 'invalid_value', message: detail }] };
    }
    const timestampMs = correctClockSkew(parsed, receivedAt, sentAtMs);
    const timing = checkTimestamp(timestampMs, receivedAt, { allowOld: request.source === 'server' });
    if (timing !== 'ok') {
      const detail =
        timing === 'timestamp_in_future'
          ? 'The timestamp is more than 1 hour ahead of the server clock (after clock-skew correction).'
          : 'The timestamp is more than 7 days old; only server-to-server senders may backfill.';
      return { code: timing, detail, errors: [{ path: '/timestamp', code: timing, message: detail }] };
    }
    if (event.event === 'poll.voted' && this.polls) {
      const vote = event.data as { pollId: string; optionIndex?: unknown; optionSelected?: unknown };
      const poll = this.polls.find(request.tenant.seq, vote.pollId);
      const problem = poll && pollVoteProblem(poll, { broadcastId: event.broadcastId, optionIndex: vote.optionIndex, optionSelected: vote.optionSelected, receivedAtMs: receivedAt });
      if (problem) {
        // A forged or stale vote on one of the service's polls never reaches storage.
        const detail = `The vote does not match poll "${vote.pollId}": ${problem.message}.`;
        return { code: 'poll_vote_invalid', detail, errors: [{ path: problem.path, code: 'poll_vote_invalid', message: problem.message }] };
      }
    }
    return { row: toRow(event, request, timestampMs, receivedAt) };
  }

  /** Fills `campaignId` from the broadcast registry, registering unknown broadcasts. */
  private async assignCampaigns(tenant: Tenant, valid: ValidEvent[], now: number): Promise<void> {
    const missing = new Map<string, number>();
    for (const v of valid) {
      const campaignId = this.broadcastCampaigns.get(`${tenant.seq}:${v.row.broadcastId}`);
      if (campaignId !== undefined) v.row.campaignId = campaignId;
      else if (!missing.has(v.row.broadcastId)) {
        // DESIGN 6: a broadcast seen first is registered under the tenant's default campaign;
        // a public key must not be able to create campaigns.
        missing.set(v.row.broadcastId, tenant.settings.defaultCampaignId);
      }
    }
    if (!missing.size) return;
    const resolved = await this.meta.resolveBroadcasts(
      tenant.seq,
      [...missing].map(([broadcastId, campaignId]) => ({ broadcastId, campaignId })),
      now,
    );
    if (this.broadcastCampaigns.size + resolved.size > BROADCAST_CACHE_MAX_ENTRIES) this.broadcastCampaigns.clear();
    for (const [broadcastId, campaignId] of resolved) this.broadcastCampaigns.set(`${tenant.seq}:${broadcastId}`, campaignId);
    for (const v of valid) {
      const campaignId = resolved.get(v.row.broadcastId);
      if (campaignId !== undefined) v.row.campaignId = campaignId;
    }
  }

  /** Quarantined rejects, newest first, continuing after an opaque cursor. */
  async listRejected(tenant: Tenant, limit: number, cursor?: string): Promise<{ data: QuarantinedEvent[]; nextCursor: string | null }> {
    const data = await this.events.listRejected(tenant.seq, { limit, after: cursor ? decodeRejectCursor(cursor) : undefined });
    const last = data[data.length - 1];
    const nextCursor = data.length === limit && last ? encodeRejectCursor(Date.parse(last.receivedAt), last.id) : null;
    return { data, nextCursor };
  }

  /** Campaign of a broadcast; an unknown one is registered under the tenant's default campaign. */
  async campaignOf(tenant: Tenant, broadcastId: string): Promise<number> {
    const cached = this.broadcastCampaigns.get(`${tenant.seq}:${broadcastId}`);
    if (cached !== undefined) return cached;
    const resolved = await this.meta.resolveBroadcasts(tenant.seq, [{ broadcastId, campaignId: tenant.settings.defaultCampaignId }], this.clock.now());
    const campaignId = resolved.get(broadcastId) ?? tenant.settings.defaultCampaignId;
    this.broadcastCampaigns.set(`${tenant.seq}:${broadcastId}`, campaignId);
    return campaignId;
  }

  /** Forgets cached broadcast → campaign links (after the registry changed). */
  forgetBroadcast(tenantSeq: number, broadcastId: string): void {
    this.broadcastCampaigns.delete(`${tenantSeq}:${broadcastId}`);
  }

  /**
   * Forgets the campaign of a broadcast another node changed (all of them when notices may
   * have been lost). Call once, before serving.
   */
  followChanges(feed: MetadataChangeFeed): void {
    feed.subscribe({
      changed: (change, fromThisNode) => {
        if (!fromThisNode && change.kind === 'broadcast' && change.id !== undefined) this.forgetBroadcast(change.tenantSeq, change.id);
      },
      missedChanges: () => this.broadcastCampaigns.clear(),
    });
  }
}

/** A validated event as sent (its shape checked by the event schemas). */
type RawEvent = IncomingEvent;

function unpackBody(body: unknown): { events: unknown[]; sentAtMs: number | undefined } {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new SvcError('invalid_body', 'The body must be one event object or {"sentAt": ..., "events": [...]}.');
  }
  const batch = body as { events?: unknown; sentAt?: unknown };
  if (batch.events === undefined) return { events: [body], sentAtMs: undefined };
  if (!Array.isArray(batch.events)) {
    throw new SvcError('invalid_body', '"events" must be an array.', {
      errors: [{ path: '/events', code: 'invalid_type', message: 'must be array' }],
    });
  }
  if (batch.events.length > MAX_EVENTS_PER_REQUEST) {
    throw new SvcError('payload_too_large', `A request carries at most ${MAX_EVENTS_PER_REQUEST} events; this one has ${batch.events.length}.`);
  }
  let sentAtMs: number | undefined;
  if (batch.sentAt !== undefined) {
    sentAtMs = typeof batch.sentAt === 'string' && /^\d{4}-\d\d-\d\dT/.test(batch.sentAt) ? Date.parse(batch.sentAt) : NaN;
    if (Number.isNaN(sentAtMs)) {
      throw new SvcError('validation_failed', '"sentAt" must be an ISO 8601 date-time.', {
        errors: [{ path: '/sentAt', code: 'invalid_value', message: 'must be an ISO 8601 date-time' }],
      });
    }
  }
  return { events: batch.events, sentAtMs };
}

function toRow(event: RawEvent, request: IngestRequest, timestampMs: number, receivedAt: number): EventRow {
  const commerce = isCommerceEvent(event.event);
  const items = commerce ? (event.items ?? []) : null;
  const total = commerce ? (event.total ?? sumItems(items!)) : null;
  // A server-to-server sender's IP says nothing of the viewer, so it may name the country.
  const country = request.source === 'server' && event.country !== undefined ? event.country : request.country;
  return {
    tenantSeq: request.tenant.seq,
    eventId: (event.eventId ?? uuidv7()).toLowerCase(),
    event: event.event,
    userId: event.userId ?? null,
    sessionId: event.sessionId,
    broadcastId: event.broadcastId,
    campaignId: event.campaignId ?? request.tenant.settings.defaultCampaignId,
    timestampMs,
    receivedAtMs: receivedAt,
    country,
    orderId: commerce ? (event.orderId ?? null) : null,
    sponsorId: commerce ? (event.sponsorId ?? null) : null,
    total,
    items: items === null ? null : JSON.stringify(items),
    data: JSON.stringify(event.data),
  };
}

function sumItems(items: LineItem[]): number {
  return Math.round(items.reduce((sum, item) => sum + item.quantity * item.unitPrice, 0) * 100) / 100;
}

/** The event name as sent, unless it looks like personal data (it is masked then, whatever the rejection). */
function quarantinedEventName(raw: unknown): string | null {
  const name = (raw as { event?: unknown } | null)?.event;
  return typeof name === 'string' ? redactText(name).slice(0, 64) : null;
}

/** The sender's userId, kept so that deleting a user also clears their rejects; never personal data. */
function safeUserId(raw: unknown): string | null {
  const userId = (raw as { userId?: unknown } | null)?.userId;
  return typeof userId === 'string' && userId.length <= USER_ID_MAX_LENGTH && !detectPii(userId) ? userId : null;
}

function encodeRejectCursor(receivedAtMs: number, id: string): string {
  return Buffer.from(`${receivedAtMs}|${id}`).toString('base64url');
}

function decodeRejectCursor(cursor: string): { receivedAtMs: number; id: string } {
  const { ms, id } = parseTimeIdCursor(Buffer.from(cursor, 'base64url').toString());
  return { receivedAtMs: ms, id };
}

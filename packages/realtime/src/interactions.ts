import { uuidv7 } from 'uuidv7';
import { isClosed, type Clock, type ErrorCode, type IngestResult, type ServerMessage } from '@svc/protocol';
import type { ContestEntrant, PollVoter, Tenant, ViewerClaims } from '@svc/storage';
import type { Connection, Session } from './connection';
import type { IngestCoalescer } from './ingest-coalescer';
import { frame } from './room';
import type { RoomRegistry } from './room-registry';

export interface GatewayEventSink {
  ingest(request: { tenant: Tenant; source: 'client' | 'server'; country: string | null; body: unknown; bodyBytes: number }): Promise<IngestResult>;
  /** Campaign of a broadcast, registering it under the tenant's default campaign when new. */
  campaignOf(tenant: Tenant, broadcastId: string): Promise<number>;
}

export interface InteractionDeps {
  events: GatewayEventSink;
  /** Where votes and entries are written: coalesced into few ingest requests under load. */
  writes: IngestCoalescer;
  rooms: RoomRegistry;
  clock: Clock;
  log: { error(obj: object, msg: string): void };
  /** Every node's claims of votes and entries (full cluster mode); none: this node's rooms decide alone. */
  claims?: ViewerClaims;
}

/** Sends one message to one connection. */
export function reply(connection: Connection, message: ServerMessage): void {
  connection.send(frame(message));
}

/**
 * What viewers do over their socket: tracked events, poll votes and contest entries, each
 * stored as an event through ingest and acknowledged (or refused) to the viewer.
 */
export class Interactions {
  constructor(private readonly deps: InteractionDeps) {}

  /** A `track` message: events filled in with what the connection knows, then ingested. */
  async track(connection: Connection, events: unknown, sentAt: unknown, requestId: string | undefined, bytes: number): Promise<void> {
    const { session } = connection;
    if (!Array.isArray(events) || !events.length) {
      return reply(connection, { type: 'error', code: 'invalid_message', detail: '"events" must be a non-empty array.', requestId });
    }
    // The connection knows the session, broadcast and user: events may leave them out.
    const filled = events.map((event) => {
      if (event === null || typeof event !== 'object' || Array.isArray(event)) return event;
      const e = event as Record<string, unknown>;
      return {
        ...e,
        eventId: e.eventId ?? uuidv7(),
        sessionId: e.sessionId ?? session.id,
        broadcastId: e.broadcastId ?? session.room.broadcastId,
        ...(session.userId !== null && e.userId === undefined ? { userId: session.userId } : {}),
      };
    });
    try {
      // sentAt lets the server correct the device clock, as for HTTP batches.
      const body = typeof sentAt === 'string' ? { sentAt, events: filled } : { events: filled };
      const result = await this.deps.events.ingest({ tenant: session.tenant, source: 'client', country: session.country, body, bodyBytes: bytes });
      const rejected = new Set(result.rejected.map((r) => r.index));
      const ids = filled.flatMap((e, i) => (rejected.has(i) ? [] : [String((e as { eventId: unknown }).eventId)]));
      filled.forEach((e, i) => {
        const event = e as { event?: unknown; sessionId?: unknown };
        if (!rejected.has(i) && event.event === 'broadcast.left' && event.sessionId === session.id) session.leftByClient = true;
      });
      reply(connection, { type: 'ack', ids, requestId, ...(result.rejected.length ? { rejected: result.rejected.map(({ index, code, detail }) => ({ index, code, detail })) } : {}) });
    } catch (error) {
      this.fail(connection, error, requestId);
    }
  }

  /** A `poll.vote`: one per session and per userId, counted at once, retracted if not stored. */
  async vote(connection: Connection, pollId: unknown, optionIndex: unknown, requestId: string | undefined): Promise<void> {
    const { session } = connection;
    const room = session.room;
    const poll = typeof pollId === 'string' ? room.activeOverlay(pollId) : undefined;
    if (!poll || poll.type !== 'poll') {
      return reply(connection, { type: 'error', code: 'overlay_not_active', detail: 'No active poll with that id in this broadcast.', requestId });
    }
    const receivedAtMs = this.deps.clock.now();
    if (isClosed(poll.closesAt, receivedAtMs)) {
      return reply(connection, { type: 'error', code: 'poll_closed', detail: `This poll closed at ${poll.closesAt}.`, requestId });
    }
    if (typeof optionIndex !== 'number' || !Number.isInteger(optionIndex) || optionIndex < 0 || optionIndex >= poll.options.length) {
      return reply(connection, { type: 'error', code: 'invalid_message', detail: `"optionIndex" must be an integer from 0 to ${poll.options.length - 1}.`, requestId });
    }
    // One vote per session and per userId, including userIds the session took after voting.
    if (room.hasVoted(poll.id, session.id, session.userId)) return alreadyVoted(connection, requestId);
    // Across nodes, the claims decide: a vote cast on another node counts here only once it is stored.
    const voter: PollVoter = { tenantSeq: session.tenant.seq, pollId: poll.id, sessionId: session.id, userId: session.userId, attempt: uuidv7() };
    const claims = this.deps.claims;
    if (claims) {
      const claimed = await this.claim(connection, requestId, () => claims.claimVote(voter));
      if (claimed === null) return;
      // A vote of the viewer stored meanwhile by another path (HTTP, `track`) counts already: the claim stays.
      if (!claimed || room.hasVoted(poll.id, session.id, session.userId)) return alreadyVoted(connection, requestId);
    }
    const eventId = uuidv7();
    const timestampMs = this.deps.clock.now();
    room.recordVote(poll.id, { eventId, sessionId: session.id, userId: session.userId, timestampMs, optionIndex });
    const stored = await this.store(connection, requestId, eventId, 'poll.voted', {
      pollId: poll.id,
      questionText: poll.question,
      optionSelected: poll.options[optionIndex],
      optionIndex,
    }, timestampMs, receivedAtMs);
    if (!stored) {
      room.retractVote(poll.id, eventId);
      if (claims) await this.release(() => claims.releaseVote(voter));
      return;
    }
    this.deps.rooms.resultsChanged(room, poll.id);
  }

  /** A `contest.enter`: one entry per viewer, retracted if not stored. */
  async enter(connection: Connection, contestId: unknown, requestId: string | undefined): Promise<void> {
    const { session } = connection;
    const room = session.room;
    const contest = typeof contestId === 'string' ? room.activeOverlay(contestId) : undefined;
    if (!contest || contest.type !== 'contest') {
      return reply(connection, { type: 'error', code: 'overlay_not_active', detail: 'No active contest with that id in this broadcast.', requestId });
    }
    const receivedAtMs = this.deps.clock.now();
    if (isClosed(contest.closesAt, receivedAtMs)) {
      return reply(connection, { type: 'error', code: 'contest_closed', detail: `This contest closed at ${contest.closesAt}.`, requestId });
    }
    if (room.hasEntered(contest.id, session.viewer)) return alreadyEntered(connection, requestId);
    const entrant: ContestEntrant = { tenantSeq: session.tenant.seq, contestId: contest.id, viewer: session.viewer, attempt: uuidv7() };
    const claims = this.deps.claims;
    if (claims) {
      const claimed = await this.claim(connection, requestId, () => claims.claimEntry(entrant));
      if (claimed === null) return;
      if (!claimed) return alreadyEntered(connection, requestId);
    }
    // An entry of the viewer stored meanwhile by another path is recorded already.
    if (!room.recordEntry(contest.id, entrant.viewer)) return alreadyEntered(connection, requestId);
    const stored = await this.store(connection, requestId, uuidv7(), 'contest.entered', { contestId: contest.id, title: contest.title }, this.deps.clock.now(), receivedAtMs);
    if (!stored) {
      room.retractEntry(contest.id, entrant.viewer);
      if (claims) await this.release(() => claims.releaseEntry(entrant));
    }
  }

  /**
   * A session that voted took a userId: across nodes, that user's claim of each of those polls is
   * taken too, so that the user's other sessions are refused on every node (best effort: a claim
   * that fails is logged; the rooms still refuse it where the session's vote is known).
   */
  async bindUser(session: Session, polls: string[]): Promise<void> {
    const { claims } = this.deps;
    const userId = session.userId;
    if (!claims || userId === null) return;
    await Promise.all(
      polls.map(async (pollId) => {
        try {
          await claims.claimUser({ tenantSeq: session.tenant.seq, pollId, sessionId: session.id, userId, attempt: uuidv7() });
        } catch (error) {
          this.deps.log.error({ err: error }, 'claiming the vote of a session for the userId it took failed');
        }
      }),
    );
  }

  /**
   * Takes a claim: whether it was taken by this call, or null when the claims could not answer
   * (the viewer is told `storage_unavailable`, retryable, and nothing is counted).
   */
  private async claim(connection: Connection, requestId: string | undefined, take: () => Promise<boolean>): Promise<boolean | null> {
    try {
      return await take();
    } catch (error) {
      this.deps.log.error({ err: error }, 'claiming a vote or entry failed');
      reply(connection, { type: 'error', code: 'storage_unavailable', detail: 'Votes and entries cannot be taken right now; nothing was counted. Retry later.', requestId });
      return null;
    }
  }

  /** Gives back the claim of a vote or entry that could not be stored; a failure leaves it until the claims' TTL ends. */
  private async release(give: () => Promise<void>): Promise<void> {
    try {
      await give();
    } catch (error) {
      this.deps.log.error({ err: error }, 'giving back the claim of an unstored vote or entry failed');
    }
  }

  /** Stores a vote or entry as an event; acknowledges it, or reports why not. */
  private async store(
    connection: Connection,
    requestId: string | undefined,
    eventId: string,
    event: 'poll.voted' | 'contest.entered',
    data: Record<string, unknown>,
    timestampMs: number,
    receivedAtMs: number,
  ): Promise<boolean> {
    const { session } = connection;
    try {
      const rejection = await this.deps.writes.write({
        tenant: session.tenant,
        source: 'client',
        country: session.country,
        receivedAtMs,
        event: {
          event,
          eventId,
          userId: session.userId,
          sessionId: session.id,
          broadcastId: session.room.broadcastId,
          timestamp: new Date(timestampMs).toISOString(),
          data,
        },
      });
      if (rejection) {
        reply(connection, { type: 'error', code: rejection.code, detail: rejection.detail, requestId });
        return false;
      }
      reply(connection, { type: 'ack', ids: [eventId], requestId });
      return true;
    } catch (error) {
      this.fail(connection, error, requestId);
      return false;
    }
  }

  private fail(connection: Connection, error: unknown, requestId: string | undefined): void {
    const code = (error as { code?: ErrorCode }).code;
    if (!code) this.deps.log.error({ err: error }, 'realtime message failed');
    reply(connection, { type: 'error', code: code ?? 'internal_error', detail: code ? (error as Error).message : 'Something went wrong on our side.', requestId });
  }
}

function alreadyVoted(connection: Connection, requestId: string | undefined): void {
  reply(connection, { type: 'error', code: 'already_voted', detail: 'This viewer has already voted in this poll.', requestId });
}

function alreadyEntered(connection: Connection, requestId: string | undefined): void {
  reply(connection, { type: 'error', code: 'already_entered', detail: 'This viewer has already entered this contest.', requestId });
}


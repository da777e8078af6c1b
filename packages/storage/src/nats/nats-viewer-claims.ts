import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';
import { type KV, type KvEntry } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { openKvBucket } from './kv-bucket';
import { claimKeys, type ContestEntrant, type PollVoter, type ViewerClaims } from '../viewer-claims';
import { natsFailure } from './nats-failure';
import { AbandonedClaims, attemptOf } from './abandoned-claims';

/** The KV bucket of the claims (stream `KV_svc_claims`). */
export const CLAIMS_BUCKET = 'svc_claims';
/** How long a claim is kept, ms (the bucket's max age): 24 hours. */
export const CLAIMS_TTL_MS = 24 * 60 * 60 * 1000;
/** How long one claim or release may take in all (every KV request it makes) before the viewer is told to retry, ms. */
export const CLAIM_TIMEOUT_MS = 2_000;

/** Rounds of create, and take-over, one claim of a key makes at most (the key may be freed in between). */
const TAKE_ROUNDS = 2;

/** What a claim's value says was claimed (the key says by whom, hashed). */
type ClaimKind = 'vote' | 'entry';

export interface NatsViewerClaimsOptions {
  /** Replicas of the bucket's stream (the node's `natsReplicas`). */
  replicas: number;
  /** How long a claim is kept, ms; default `CLAIMS_TTL_MS`. */
  ttlMs?: number;
  /** How long one claim or release may take in all, ms; default `CLAIM_TIMEOUT_MS`. */
  timeoutMs?: number;
  /** First wait before a claim given up is deleted in the background, ms; default `GIVE_BACK_FIRST_WAIT_MS`. */
  giveBackFirstWaitMs?: number;
}

/**
 * Claims in the JetStream KV bucket `svc_claims`, shared by every node: a claim is a `create`
 * of its key, which fails when the key exists, so the first of two nodes wins. A vote claims the
 * session's key and then, with a userId, the user's key; when the second is taken, the first is
 * given back and the vote refused. Keys are hashed (`claimKeys`); the bucket's max age bounds how
 * long a claim stays.
 *
 * A claim's value carries the id of the attempt that took it (small JSON). A request that went
 * unanswered in time may still land later, though the viewer was told nothing counted: such an
 * attempt, and a release that failed, is remembered and deleted in the background while the key
 * still carries it (`AbandonedClaims`), and a claim that finds the key held by an attempt this
 * node gave up takes it over (compare-and-set). So an abandoned attempt never locks a viewer out.
 */
export class NatsViewerClaims implements ViewerClaims {
  private readonly abandoned: AbandonedClaims;

  private constructor(
    private readonly kv: KV,
    private readonly timeoutMs: number,
    connection: NatsConnection,
    ttlMs: number,
    firstWaitMs: number | undefined,
  ) {
    this.abandoned = new AbandonedClaims(kv, {
      ttlMs,
      inTime: (request) => this.inTime(request, Date.now() + timeoutMs),
      open: () => !connection.isClosed(),
      ...(firstWaitMs === undefined ? {} : { firstWaitMs }),
    });
  }

  /** Opens the bucket, creating it on first use. */
  static async open(connection: NatsConnection, options: NatsViewerClaimsOptions): Promise<NatsViewerClaims> {
    const timeout = options.timeoutMs ?? CLAIM_TIMEOUT_MS;
    const ttl = options.ttlMs ?? CLAIMS_TTL_MS;
    try {
      // Claims and releases go through a client whose requests time out as a viewer may wait.
      const kv = await openKvBucket(connection, CLAIMS_BUCKET, { replicas: options.replicas, ttlMs: ttl, timeoutMs: timeout });
      return new NatsViewerClaims(kv, timeout, connection, ttl, options.giveBackFirstWaitMs);
    } catch (error) {
      throw natsFailure(error, 'open the claims of votes and entries');
    }
  }

  /** Claims given up (timed out, or a release that failed) still to be deleted in the background. */
  get abandonedClaims(): number {
    return this.abandoned.size;
  }

  async claimVote(voter: PollVoter): Promise<boolean> {
    // The whole claim, with a give-back, keeps within one timeout.
    const deadline = Date.now() + this.timeoutMs;
    const session = claimKeys.sessionVote(voter);
    if (!(await this.take(session, 'vote', voter.attempt, deadline))) return false;
    if (voter.userId === null) return true;
    let userTaken: boolean;
    try {
      userTaken = !(await this.take(claimKeys.userVote({ ...voter, userId: voter.userId }), 'vote', voter.attempt, deadline));
    } catch (error) {
      this.abandoned.remember(session, voter.attempt);
      throw error;
    }
    if (userTaken) await this.giveBack(session, voter.attempt, deadline);
    return !userTaken;
  }

  claimUser(voter: PollVoter & { userId: string }): Promise<boolean> {
    return this.take(claimKeys.userVote(voter), 'vote', voter.attempt, Date.now() + this.timeoutMs);
  }

  async releaseVote(voter: PollVoter): Promise<void> {
    const deadline = Date.now() + this.timeoutMs;
    const keys = [claimKeys.sessionVote(voter), ...(voter.userId === null ? [] : [claimKeys.userVote({ ...voter, userId: voter.userId })])];
    await Promise.all(keys.map((key) => this.giveBack(key, voter.attempt, deadline)));
  }

  claimEntry(entrant: ContestEntrant): Promise<boolean> {
    return this.take(claimKeys.entry(entrant), 'entry', entrant.attempt, Date.now() + this.timeoutMs);
  }

  releaseEntry(entrant: ContestEntrant): Promise<void> {
    return this.giveBack(claimKeys.entry(entrant), entrant.attempt, Date.now() + this.timeoutMs);
  }

  /**
   * Creates the key for `attempt`: false when another attempt holds it. A key held by an attempt
   * this node gave up counts as free and is taken over at its revision. A request unanswered by
   * `deadline` is remembered as abandoned (it may land later) and the claim fails.
   */
  private async take(key: string, kind: ClaimKind, attempt: string, deadline: number): Promise<boolean> {
    const value = JSON.stringify({ claim: kind, attempt });
    // A second round when the key was freed meanwhile (the abandoned claim given back in the background).
    for (let round = 0; round < TAKE_ROUNDS; round++) {
      try {
        await this.inTime(() => this.kv.create(key, value), deadline);
        return true;
      } catch (error) {
        if (!wrongRevision(error)) throw this.abandon(key, attempt, error);
      }
      let held: KvEntry | null;
      try {
        held = await this.inTime(() => this.kv.get(key), deadline);
      } catch (error) {
        throw natsFailure(error, 'take this vote or entry');
      }
      if (!held || held.operation !== 'PUT') continue;
      const holder = attemptOf(held);
      if (holder === null || !this.abandoned.holds(key, holder)) return false;
      try {
        await this.inTime(() => this.kv.update(key, value, held.revision), deadline);
        this.abandoned.forget(key, holder);
        return true;
      } catch (error) {
        if (!wrongRevision(error)) throw this.abandon(key, attempt, error);
      }
    }
    return false;
  }

  /** A write of `attempt` on `key` failed or went unanswered: remembered (it may land later), and the viewer told to retry. */
  private abandon(key: string, attempt: string, error: unknown): Error {
    this.abandoned.remember(key, attempt);
    return natsFailure(error, 'take this vote or entry');
  }

  /** Deletes the key while `attempt` holds it; what cannot be done by `deadline` is done in the background. */
  private async giveBack(key: string, attempt: string, deadline: number): Promise<void> {
    await this.abandoned.giveBack(key, attempt, (request) => this.inTime(request, deadline));
  }

  /** The KV request, or a failure once `deadline` passed (a request the client holds while it reconnects may outlast its own timeout). */
  private inTime<T>(request: () => Promise<T>, deadline: number): Promise<T> {
    const leftMs = deadline - Date.now();
    if (leftMs <= 0) return Promise.reject(new Error(`The claims did not answer within ${this.timeoutMs} ms.`));
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`The claims did not answer within ${this.timeoutMs} ms.`)), leftMs + 100);
    });
    return Promise.race([request(), late]).finally(() => clearTimeout(timer));
  }
}

/** Whether a KV write was refused because the key was not at the expected revision (a create over a live key, a compare-and-set that lost). */
function wrongRevision(error: unknown): boolean {
  return error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamWrongLastSequence;
}

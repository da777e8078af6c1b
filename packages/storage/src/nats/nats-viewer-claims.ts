import { JetStreamApiCodes, JetStreamApiError, jetstream } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { claimKeys, type ContestEntrant, type PollVoter, type ViewerClaims } from '../viewer-claims';
import { natsFailure } from './nats-failure';

/** The KV bucket of the claims (stream `KV_svc_claims`). */
export const CLAIMS_BUCKET = 'svc_claims';
/** How long a claim is kept, ms (the bucket's max age): 24 hours. */
export const CLAIMS_TTL_MS = 24 * 60 * 60 * 1000;
/** How long one claim or release may take before the viewer is told to retry, ms. */
export const CLAIM_TIMEOUT_MS = 2_000;
/** How long creating (or finding) the bucket at start-up may take, ms (replicas are placed then). */
const BUCKET_OPEN_TIMEOUT_MS = 10_000;

/** A claim's value: small JSON, saying what was claimed (the key says by whom, hashed). */
const VOTE_VALUE = '{"claim":"vote"}';
const ENTRY_VALUE = '{"claim":"entry"}';

export interface NatsViewerClaimsOptions {
  /** Replicas of the bucket's stream (the node's `natsReplicas`). */
  replicas: number;
  /** How long a claim is kept, ms; default `CLAIMS_TTL_MS`. */
  ttlMs?: number;
  /** Timeout of each KV request, ms; default `CLAIM_TIMEOUT_MS`. */
  timeoutMs?: number;
}

/**
 * Claims in the JetStream KV bucket `svc_claims`, shared by every node: a claim is a `create`
 * of its key, which fails when the key exists, so the first of two nodes wins. A vote claims the
 * session's key and then, with a userId, the user's key; when the second is taken, the first is
 * released and the vote refused. A release deletes the keys (a later `create` succeeds over the
 * delete marker). Keys are hashed (`claimKeys`); the bucket's max age bounds how long a claim stays.
 */
export class NatsViewerClaims implements ViewerClaims {
  private constructor(
    private readonly kv: KV,
    private readonly timeoutMs: number,
  ) {}

  /** Opens the bucket, creating it on first use. */
  static async open(connection: NatsConnection, options: NatsViewerClaimsOptions): Promise<NatsViewerClaims> {
    const timeout = options.timeoutMs ?? CLAIM_TIMEOUT_MS;
    try {
      await new Kvm(jetstream(connection, { timeout: BUCKET_OPEN_TIMEOUT_MS })).create(CLAIMS_BUCKET, {
        replicas: options.replicas,
        history: 1,
        ttl: options.ttlMs ?? CLAIMS_TTL_MS,
      });
      // Claims and releases go through a client whose requests time out as a viewer may wait.
      const kv = await new Kvm(jetstream(connection, { timeout })).open(CLAIMS_BUCKET, { timeout });
      return new NatsViewerClaims(kv, timeout);
    } catch (error) {
      throw natsFailure(error, 'open the claims of votes and entries');
    }
  }

  async claimVote(voter: PollVoter): Promise<boolean> {
    const session = claimKeys.sessionVote(voter);
    if (!(await this.create(session, VOTE_VALUE))) return false;
    if (voter.userId === null) return true;
    let userTaken: boolean;
    try {
      userTaken = !(await this.create(claimKeys.userVote({ ...voter, userId: voter.userId }), VOTE_VALUE));
    } catch (error) {
      await this.remove(session).catch(() => undefined);
      throw error;
    }
    if (userTaken) await this.remove(session);
    return !userTaken;
  }

  async releaseVote(voter: PollVoter): Promise<void> {
    await this.remove(claimKeys.sessionVote(voter));
    if (voter.userId !== null) await this.remove(claimKeys.userVote({ ...voter, userId: voter.userId }));
  }

  claimEntry(entrant: ContestEntrant): Promise<boolean> {
    return this.create(claimKeys.entry(entrant), ENTRY_VALUE);
  }

  releaseEntry(entrant: ContestEntrant): Promise<void> {
    return this.remove(claimKeys.entry(entrant));
  }

  /** Creates the key: false when it exists (another claim was first). */
  private async create(key: string, value: string): Promise<boolean> {
    try {
      await this.inTime(this.kv.create(key, value));
      return true;
    } catch (error) {
      if (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamWrongLastSequence) return false;
      throw natsFailure(error, 'take this vote or entry');
    }
  }

  private async remove(key: string): Promise<void> {
    try {
      await this.inTime(this.kv.delete(key));
    } catch (error) {
      throw natsFailure(error, 'give back this vote or entry');
    }
  }

  /** The KV request, or a failure once its timeout passed (a request the client holds while it reconnects may outlast it). */
  private inTime<T>(request: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`The claims did not answer within ${this.timeoutMs} ms.`)), this.timeoutMs + 100);
    });
    return Promise.race([request, late]).finally(() => clearTimeout(timer));
  }
}

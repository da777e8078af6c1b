import { systemClock, type Clock, type KnownPolls, type PollContent, type PollDefinition } from '@svc/protocol';
import type { ContentStore, OverlayRecord } from '@svc/storage';

/** A poll overlay as the vote rule reads it. */
export function pollDefinition(record: Pick<OverlayRecord, 'id' | 'broadcastId' | 'createdAt'> & { content: PollContent }): PollDefinition {
  const { question, options, closesAt } = record.content;
  const definition: PollDefinition = { id: record.id, broadcastId: record.broadcastId, question, options: [...options], createdAtMs: record.createdAt };
  if (closesAt !== undefined) definition.closesAtMs = Date.parse(closesAt);
  return definition;
}

/**
 * Every poll of every tenant, in memory, so that ingest can check each vote against its poll
 * without a query. Loaded once at start-up; the content service keeps it current (with polls
 * changed on other nodes too, when it follows a change feed). When a change from another node
 * may have been missed, `readAgain` reads every poll from the store again.
 */
export class PollCatalogue implements KnownPolls {
  private polls = new Map<string, PollDefinition>();
  private store: Pick<ContentStore, 'listPolls'> | null = null;
  /** When the newest complete read of every poll began (null: never read). */
  private readBeganAt: number | null = null;
  /** The read of every poll under way, with the time it began. */
  private reading: { beganAt: number; done: Promise<void> } | null = null;
  /** A read asked for while one was under way: it begins when that one ends, and serves every such ask. */
  private nextRead: Promise<void> | null = null;
  /** Changes recorded while a read is under way, applied again over what it read. */
  private changedMeanwhile: Array<(polls: Map<string, PollDefinition>) => void> | null = null;

  constructor(private readonly clock: Clock = systemClock) {}

  async load(store: Pick<ContentStore, 'listPolls'>): Promise<this> {
    await this.reload(store);
    return this;
  }

  /** Reads every poll again (changes may have been missed); lookups see the old ones until done. */
  reload(store: Pick<ContentStore, 'listPolls'>): Promise<void> {
    this.store = store;
    if (!this.reading) return this.read(store);
    this.nextRead ??= this.reading.done.catch(() => undefined).then(() => {
      this.nextRead = null;
      return this.read(store);
    });
    return this.nextRead;
  }

  /**
   * Makes the catalogue hold every poll the store held at `notBeforeMs` (epoch ms; now, if later):
   * reads them all again unless a read that began at or after that time has completed or is under
   * way. For a reader that finds votes on a poll it does not know (a notice may have been lost).
   */
  async readAgain(notBeforeMs: number): Promise<void> {
    if (!this.store) return;
    const since = Math.min(notBeforeMs, this.clock.now());
    if (this.readBeganAt !== null && this.readBeganAt >= since) return;
    if (this.reading && this.reading.beganAt >= since) return this.reading.done;
    await this.reload(this.store);
  }

  find(tenantSeq: number, pollId: string): PollDefinition | undefined {
    return this.polls.get(key(tenantSeq, pollId));
  }

  /** Records a poll overlay as created or changed; other overlay types are ignored. */
  remember(record: OverlayRecord): void {
    const poll = pollOf(record);
    if (poll) this.change((polls) => polls.set(key(record.tenantSeq, record.id), poll));
  }

  forget(tenantSeq: number, pollId: string): void {
    this.change((polls) => polls.delete(key(tenantSeq, pollId)));
  }

  private change(apply: (polls: Map<string, PollDefinition>) => void): void {
    apply(this.polls);
    this.changedMeanwhile?.push(apply);
  }

  private read(store: Pick<ContentStore, 'listPolls'>): Promise<void> {
    const beganAt = this.clock.now();
    this.changedMeanwhile = [];
    const done = (async () => {
      try {
        const fresh = new Map<string, PollDefinition>();
        for (const record of await store.listPolls()) {
          const poll = pollOf(record);
          if (poll) fresh.set(key(record.tenantSeq, record.id), poll);
        }
        // A change applied while the store was read may be missing from what it gave.
        for (const apply of this.changedMeanwhile ?? []) apply(fresh);
        this.polls = fresh;
        this.readBeganAt = beganAt;
      } finally {
        this.changedMeanwhile = null;
        this.reading = null;
      }
    })();
    this.reading = { beganAt, done };
    return done;
  }
}

/** A poll overlay's definition; null for other overlay types. */
function pollOf(record: OverlayRecord): PollDefinition | null {
  return record.content.type === 'poll' ? pollDefinition({ ...record, content: record.content }) : null;
}

function key(tenantSeq: number, pollId: string): string {
  return `${tenantSeq}:${pollId}`;
}

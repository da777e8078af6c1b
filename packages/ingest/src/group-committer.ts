import { SvcError } from '@svc/protocol';
import { eventKey, type CommitBatch, type EventStore } from '@svc/storage';

/** Most events one transaction carries; more wait for the next one. */
export const MAX_EVENTS_PER_COMMIT = 20_000;

export interface CommitObserver {
  /** Called after each durable commit. */
  committed(durationSeconds: number, events: number): void;
}

export interface GroupCommitterOptions {
  /**
   * Whether submissions arriving together share one commit (default true). A store whose commit
   * is cheap to run concurrently and names each submission's content (the JetStream event log:
   * one message per request, its id derived from its events, so that a request retried on any
   * node is recognised) takes each submission as its own commit instead.
   */
  group?: boolean;
}

interface Pending {
  batch: CommitBatch;
  resolve: (inserted: Set<string>) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit: requests that arrive while a transaction is being written wait and go
 * together into the next one, so the cost of a durable commit is shared. A caller's promise
 * resolves only once its events are committed, with the keys (tenantSeq:eventId) that its
 * own submission inserted: when two callers send the same event in one group, the first owns it.
 */
export class GroupCommitter {
  private queue: Pending[] = [];
  private running: Promise<void> | null = null;
  private closed = false;
  private lastSubmitted: Promise<unknown> = Promise.resolve();

  private readonly alone = new Set<Promise<unknown>>();

  constructor(
    private readonly store: EventStore,
    private readonly observer: CommitObserver = { committed: () => {} },
    private readonly options: GroupCommitterOptions = {},
  ) {}

  submit(batch: CommitBatch): Promise<Set<string>> {
    if (this.closed) return Promise.reject(new SvcError('not_ready', 'The service is shutting down.'));
    if (this.options.group === false) return this.commitAlone(batch);
    const submitted = new Promise<Set<string>>((resolve, reject) => {
      this.queue.push({ batch, resolve, reject });
      // Let the current turn of the event loop add its submissions before writing.
      this.running ??= new Promise<void>((done) => setImmediate(done)).then(() => this.drain());
    });
    this.lastSubmitted = submitted;
    return submitted;
  }

  /** Resolves once every submission made before the call has been committed (or has failed). */
  async settled(): Promise<void> {
    // Groups commit in the order of submission: the last one settles after all the others.
    await this.lastSubmitted.catch(() => undefined);
    await Promise.allSettled([...this.alone]);
  }

  /** Stops taking submissions and waits for every queued one to be committed. */
  async close(): Promise<void> {
    this.closed = true;
    await this.running;
    await Promise.allSettled([...this.alone]);
  }

  private commitAlone(batch: CommitBatch): Promise<Set<string>> {
    const started = performance.now();
    const committed = this.store.commit(batch).then(({ inserted }) => {
      this.observer.committed((performance.now() - started) / 1000, batch.events.length);
      return inserted;
    });
    this.alone.add(committed);
    void committed.then(
      () => this.alone.delete(committed),
      () => this.alone.delete(committed),
    );
    return committed;
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length) await this.commitGroup(this.takeGroup());
    } finally {
      this.running = null;
    }
  }

  private takeGroup(): Pending[] {
    let events = 0;
    let count = 0;
    while (count < this.queue.length && (count === 0 || events + this.queue[count]!.batch.events.length <= MAX_EVENTS_PER_COMMIT)) {
      events += this.queue[count]!.batch.events.length;
      count++;
    }
    return this.queue.splice(0, count);
  }

  private async commitGroup(group: Pending[]): Promise<void> {
    const owner = new Map<string, Pending>();
    const combined: CommitBatch = { events: [], keys: [], rejects: [], deliveries: [] };
    for (const pending of group) {
      const { events, keys } = pending.batch;
      for (let i = 0; i < events.length; i++) {
        const event = events[i]!;
        const key = keys?.[i] ?? eventKey(event.tenantSeq, event.eventId);
        if (owner.has(key)) continue;
        owner.set(key, pending);
        combined.events.push(event);
        combined.keys!.push(key);
      }
      combined.rejects.push(...pending.batch.rejects);
      combined.deliveries!.push(...(pending.batch.deliveries ?? []).filter((d) => owner.get(eventKey(d.tenantSeq, d.eventId)) === pending));
    }
    const started = performance.now();
    try {
      const { inserted } = await this.store.commit(combined);
      this.observer.committed((performance.now() - started) / 1000, combined.events.length);
      const mine = new Map<Pending, Set<string>>(group.map((p) => [p, new Set<string>()]));
      for (const key of inserted) {
        const pending = owner.get(key);
        if (pending) mine.get(pending)!.add(key);
      }
      for (const pending of group) pending.resolve(mine.get(pending)!);
    } catch (error) {
      for (const pending of group) pending.reject(error);
    }
  }
}

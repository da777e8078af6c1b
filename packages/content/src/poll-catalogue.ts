import type { KnownPolls, PollContent, PollDefinition } from '@svc/protocol';
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
 * changed on other nodes too, when it follows a change feed).
 */
export class PollCatalogue implements KnownPolls {
  private polls = new Map<string, PollDefinition>();

  async load(store: Pick<ContentStore, 'listPolls'>): Promise<this> {
    for (const record of await store.listPolls()) this.remember(record);
    return this;
  }

  /** Reads every poll again (changes may have been missed); lookups see the old ones until done. */
  async reload(store: Pick<ContentStore, 'listPolls'>): Promise<void> {
    const fresh = new PollCatalogue();
    await fresh.load(store);
    this.polls = fresh.polls;
  }

  find(tenantSeq: number, pollId: string): PollDefinition | undefined {
    return this.polls.get(key(tenantSeq, pollId));
  }

  /** Records a poll overlay as created or changed; other overlay types are ignored. */
  remember(record: OverlayRecord): void {
    if (record.content.type !== 'poll') return;
    this.polls.set(key(record.tenantSeq, record.id), pollDefinition({ ...record, content: record.content }));
  }

  forget(tenantSeq: number, pollId: string): void {
    this.polls.delete(key(tenantSeq, pollId));
  }
}

function key(tenantSeq: number, pollId: string): string {
  return `${tenantSeq}:${pollId}`;
}

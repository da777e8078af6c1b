import { isDeepStrictEqual } from 'node:util';
import type { OverlayContent } from '@svc/protocol';
import type { ContentStore, OverlayRecord } from './content-store';
import type { MetadataChangeFeed } from './metadata-change-feed';

/** Where the copies go: a content store that also writes a record exactly as given. */
export interface OverlayCopies extends ContentStore {
  /**
   * Writes the record in place of the one stored under its id, if any, times included: a copy
   * deleted and made again would leave a moment without it, and votes derived then would be left out.
   */
  putOverlay(record: OverlayRecord): Promise<void>;
}

/**
 * A content store that keeps a copy of every poll it writes in a second store (the node's
 * DuckDB in cluster mode): the dashboard's poll results and vote rollups join the votes in the
 * events with their polls' question and options in SQL, so the polls must sit beside the
 * events. Everything else is read from and written to `source` alone.
 */
export class PollCopyingContentStore implements ContentStore {
  /** Other nodes' poll changes, copied one after the other so that an older copy never lands last. */
  private applyingChanges: Promise<void> = Promise.resolve();
  /** Polls whose votes are to be derived again (`tenantSeq/id`), until that succeeds: the next full copy tries again. */
  private readonly votesToDerive = new Map<string, { tenantSeq: number; id: string }>();
  /**
   * @param votesOfPollsCopied called after copies of a tenant's polls written through another
   *   node landed here, new or changed in what decides their votes (broadcast, creation time,
   *   options): votes stored here before were checked against no poll, or another, and must be
   *   derived again (the node's `DuckDbAnalyticsStore.votesOfPollsCopied`).
   */
  constructor(
    private readonly source: ContentStore,
    private readonly copies: OverlayCopies,
    private readonly votesOfPollsCopied: (tenantSeq: number, pollIds: string[]) => Promise<void> = async () => {},
  ) {}

  /**
   * Brings the copies in line with `source`'s polls (those created, changed or deleted while
   * this node was not running, or by another node).
   */
  async copyPolls(): Promise<void> {
    const polls = await this.source.listPolls();
    const keyOf = (poll: OverlayRecord) => `${poll.tenantSeq}/${poll.id}`;
    const kept = new Set(polls.map(keyOf));
    const copied = new Map<string, OverlayRecord>();
    for (const copy of await this.copies.listPolls()) {
      if (kept.has(keyOf(copy))) copied.set(keyOf(copy), copy);
      else await this.copies.deleteOverlay(copy.tenantSeq, copy.id);
    }
    for (const poll of polls) {
      const copy = copied.get(keyOf(poll));
      if (copy && isDeepStrictEqual(copy, poll)) continue;
      await this.copies.putOverlay(poll);
      if (!copy || decidesVotesDifferently(copy, poll)) this.votesToDerive.set(keyOf(poll), { tenantSeq: poll.tenantSeq, id: poll.id });
    }
    await this.deriveVotes();
  }

  /**
   * Copies a poll written through another node when its notice arrives (all polls again when
   * notices may have been lost), so that this node's poll results count its votes at once.
   */
  followChanges(feed: MetadataChangeFeed): void {
    feed.subscribe({
      changed: (change, fromThisNode) => {
        if (fromThisNode || change.kind !== 'overlay' || change.id === undefined) return;
        const id = change.id;
        this.applyLater(async () => {
          const record = await this.source.getOverlay(change.tenantSeq, id);
          if (record?.type === 'poll') {
            const copy = await this.copies.getOverlay(change.tenantSeq, id);
            // Already copied (a full copy came first), or a later change made through this node
            // before this job read the copy (each change of an overlay stores a later updatedAt).
            // One made through this node between that read and the write below is overwritten
            // with this older record, and a deletion then is undone: until the poll's next
            // change or the next full copy (the node's own writes do not wait for this queue).
            if (copy && (isDeepStrictEqual(copy, record) || copy.updatedAt > record.updatedAt)) return;
            await this.copies.putOverlay(record);
            if (!copy || decidesVotesDifferently(copy, record)) {
              this.votesToDerive.set(`${change.tenantSeq}/${id}`, { tenantSeq: change.tenantSeq, id });
              await this.deriveVotes();
            }
          } else if (!record) await this.copies.deleteOverlay(change.tenantSeq, id);
        });
      },
      missedChanges: () => this.applyLater(() => this.copyPolls()),
    });
  }

  /** Settles once the changes heard so far from other nodes are copied. */
  changesApplied(): Promise<void> {
    return this.applyingChanges;
  }

  createCampaign: ContentStore['createCampaign'] = (record) => this.source.createCampaign(record);
  nextCampaignId: ContentStore['nextCampaignId'] = (tenantSeq) => this.source.nextCampaignId(tenantSeq);
  createCampaignWithNextId: ContentStore['createCampaignWithNextId'] = (tenantSeq, name, createdAt) => this.source.createCampaignWithNextId(tenantSeq, name, createdAt);
  getCampaign: ContentStore['getCampaign'] = (tenantSeq, id) => this.source.getCampaign(tenantSeq, id);
  listCampaigns: ContentStore['listCampaigns'] = (tenantSeq) => this.source.listCampaigns(tenantSeq);
  renameCampaign: ContentStore['renameCampaign'] = (tenantSeq, id, name) => this.source.renameCampaign(tenantSeq, id, name);
  createSponsor: ContentStore['createSponsor'] = (record) => this.source.createSponsor(record);
  getSponsor: ContentStore['getSponsor'] = (tenantSeq, id) => this.source.getSponsor(tenantSeq, id);
  listSponsors: ContentStore['listSponsors'] = (tenantSeq) => this.source.listSponsors(tenantSeq);
  updateSponsor: ContentStore['updateSponsor'] = (tenantSeq, id, patch) => this.source.updateSponsor(tenantSeq, id, patch);
  createBroadcast: ContentStore['createBroadcast'] = (record) => this.source.createBroadcast(record);
  getBroadcast: ContentStore['getBroadcast'] = (tenantSeq, id) => this.source.getBroadcast(tenantSeq, id);
  listBroadcasts: ContentStore['listBroadcasts'] = (tenantSeq) => this.source.listBroadcasts(tenantSeq);
  updateBroadcast: ContentStore['updateBroadcast'] = (tenantSeq, id, patch) => this.source.updateBroadcast(tenantSeq, id, patch);
  getOverlay: ContentStore['getOverlay'] = (tenantSeq, id) => this.source.getOverlay(tenantSeq, id);
  listOverlays: ContentStore['listOverlays'] = (tenantSeq, broadcastId) => this.source.listOverlays(tenantSeq, broadcastId);
  listPolls: ContentStore['listPolls'] = () => this.source.listPolls();

  async createOverlay(record: OverlayRecord): Promise<void> {
    await this.source.createOverlay(record);
    if (record.type === 'poll') await this.copies.putOverlay(record);
  }

  async updateOverlay(
    tenantSeq: number,
    id: string,
    patch: { content?: OverlayContent; active?: boolean; shownAt?: number },
    updatedAt: number,
  ): Promise<OverlayRecord | null> {
    const updated = await this.source.updateOverlay(tenantSeq, id, patch, updatedAt);
    if (updated?.type === 'poll') await this.copies.putOverlay(updated);
    return updated;
  }

  async deleteOverlay(tenantSeq: number, id: string): Promise<boolean> {
    const deleted = await this.source.deleteOverlay(tenantSeq, id);
    await this.copies.deleteOverlay(tenantSeq, id);
    return deleted;
  }

  private applyLater(job: () => Promise<void>): void {
    // A failed copy (a database unreachable) is made again with every poll once the feed is back.
    this.applyingChanges = this.applyingChanges.then(job).catch(() => undefined);
  }

  /** Derives again the votes of the polls waiting for it, per tenant; those that fail wait for the next full copy. */
  private async deriveVotes(): Promise<void> {
    const byTenant = new Map<number, string[]>();
    for (const { tenantSeq, id } of this.votesToDerive.values()) byTenant.set(tenantSeq, [...(byTenant.get(tenantSeq) ?? []), id]);
    for (const [tenantSeq, ids] of byTenant) {
      await this.votesOfPollsCopied(tenantSeq, ids);
      for (const id of ids) this.votesToDerive.delete(`${tenantSeq}/${id}`);
    }
  }
}

/** Whether two records of a poll differ in what its votes are checked against (pollVoteProblem). */
function decidesVotesDifferently(a: OverlayRecord, b: OverlayRecord): boolean {
  return a.type !== b.type || a.broadcastId !== b.broadcastId || a.createdAt !== b.createdAt || !isDeepStrictEqual(a.content, b.content);
}

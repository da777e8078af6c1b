import { randomBytes } from 'node:crypto';
import { fanOut, randomBase62, SvcError, systemClock, type Bus, type Clock, type ContentChange, type Overlay, type OverlayContent } from '@svc/protocol';
import type { BroadcastRecord, CampaignRecord, ContentStore, InteractionStore, MetadataChangeFeed, MetadataChangeKind, OverlayRecord, SponsorRecord, Tenant } from '@svc/storage';
import { OverlayValidator } from './overlay-validator';
import { overlayViews } from './overlay-view';
import type { PollCatalogue } from './poll-catalogue';
import { TurnsByKey } from './turns-by-key';

/** How often an automatic campaign id is drawn before a create gives up (concurrent creates). */
const AUTOMATIC_ID_ATTEMPTS = 3;

export type RandomBytes = (size: number) => Uint8Array;

/**
 * The content the gateway shows: campaigns, sponsors, broadcasts and their overlays. Every
 * change to an overlay that viewers can see is published on the bus (`content.changed`), and
 * every broadcast moved to another campaign too (`broadcast.registered`).
 */
export class ContentService {
  private readonly validator = new OverlayValidator();
  private changes: MetadataChangeFeed | null = null;
  /** Other nodes' overlay changes, applied one after the other so that an older read never lands last. */
  private applyingChanges: Promise<void> = Promise.resolve();
  /**
   * The changes to one overlay (update, show, hide, delete) this node makes, one at a time: each
   * publishes to the viewers after what it stored, so viewers get this node's changes in the
   * order they were stored (a show still looking up its sponsor never lands after the hide that
   * followed it). Changes made at the same moment on two nodes are not ordered here.
   */
  private readonly overlayTurns = new TurnsByKey();

  constructor(
    private readonly store: ContentStore,
    /** The votes already cast, which a poll's options must then keep. */
    private readonly interactions: InteractionStore,
    private readonly bus: Bus,
    private readonly clock: Clock = systemClock,
    private readonly random: RandomBytes = randomBytes,
    /** The polls ingest checks votes against; told of every poll created, changed or deleted. */
    private readonly polls: PollCatalogue | null = null,
  ) {}

  /**
   * Publishes on `feed` the changes other nodes cache (overlays, for their poll catalogues;
   * broadcasts, for ingest's campaign of each broadcast), and applies other nodes' overlay
   * changes to this node's poll catalogue (all polls read again when notices may have been
   * lost). Call once, before serving.
   */
  followChanges(feed: MetadataChangeFeed): void {
    this.changes = feed;
    const polls = this.polls;
    if (!polls) return;
    feed.subscribe({
      changed: (change, fromThisNode) => {
        if (fromThisNode || change.kind !== 'overlay' || change.id === undefined) return;
        const id = change.id;
        this.applyLater(async () => {
          const record = await this.store.getOverlay(change.tenantSeq, id);
          if (record) polls.remember(record);
          else polls.forget(change.tenantSeq, id);
        });
      },
      missedChanges: () => this.applyLater(() => polls.reload(this.store)),
    });
  }

  /** Settles once the changes heard so far from other nodes are applied. */
  changesApplied(): Promise<void> {
    return this.applyingChanges;
  }

  async createCampaign(tenant: Tenant, input: { id?: number; name: string }): Promise<CampaignRecord> {
    const createdAt = this.clock.now();
    if (input.id !== undefined) {
      const record: CampaignRecord = { tenantSeq: tenant.seq, id: input.id, name: input.name, createdAt };
      if (await this.store.createCampaign(record)) return record;
      throw new SvcError('conflict', `Campaign ${input.id} already exists.`);
    }
    // Automatic ids are drawn and taken at once; only a create naming the drawn id at the same
    // moment can take it first, and then the next one is drawn.
    for (let attempt = 1; attempt <= AUTOMATIC_ID_ATTEMPTS; attempt++) {
      const id = await this.store.createCampaignWithNextId(tenant.seq, input.name, createdAt);
      if (id !== null) return { tenantSeq: tenant.seq, id, name: input.name, createdAt };
      if ((await this.store.nextCampaignId(tenant.seq)) === null) throw new SvcError('conflict', 'Every campaign id is taken.');
    }
    throw new SvcError('conflict', 'The campaign ids drawn were taken by other creates meanwhile; try again.');
  }

  listCampaigns(tenant: Tenant): Promise<CampaignRecord[]> {
    return this.store.listCampaigns(tenant.seq);
  }

  async getCampaign(tenant: Tenant, id: number): Promise<CampaignRecord> {
    return found(await this.store.getCampaign(tenant.seq, id), `No campaign ${id}.`);
  }

  async renameCampaign(tenant: Tenant, id: number, name: string): Promise<CampaignRecord> {
    return found(await this.store.renameCampaign(tenant.seq, id, name), `No campaign ${id}.`);
  }

  async createSponsor(tenant: Tenant, input: { id?: string; name: string; logoUrl?: string }): Promise<SponsorRecord> {
    const record: SponsorRecord = {
      tenantSeq: tenant.seq,
      id: input.id ?? `sp_${randomBase62(12, this.random)}`,
      name: input.name,
      logoUrl: input.logoUrl ?? null,
      createdAt: this.clock.now(),
    };
    if (!(await this.store.createSponsor(record))) throw new SvcError('conflict', `Sponsor "${record.id}" already exists.`);
    return record;
  }

  listSponsors(tenant: Tenant): Promise<SponsorRecord[]> {
    return this.store.listSponsors(tenant.seq);
  }

  async getSponsor(tenant: Tenant, id: string): Promise<SponsorRecord> {
    return found(await this.store.getSponsor(tenant.seq, id), `No sponsor "${id}".`);
  }

  /** Renames a sponsor or changes its logo (`logoUrl: null` removes it); overlays show the change when next read or pushed. */
  async updateSponsor(tenant: Tenant, id: string, patch: { name?: string; logoUrl?: string | null }): Promise<SponsorRecord> {
    return found(await this.store.updateSponsor(tenant.seq, id, patch), `No sponsor "${id}".`);
  }

  async createBroadcast(tenant: Tenant, input: { id: string; campaignId: number; title?: string }): Promise<BroadcastRecord> {
    await this.requireCampaign(tenant, input.campaignId);
    const record: BroadcastRecord = { tenantSeq: tenant.seq, id: input.id, campaignId: input.campaignId, title: input.title ?? null, createdAt: this.clock.now() };
    if (!(await this.store.createBroadcast(record))) {
      throw new SvcError('conflict', `Broadcast "${input.id}" already exists (perhaps discovered from its first events); change it with PATCH.`);
    }
    fanOut(this.bus, 'broadcast.registered', { tenantSeq: tenant.seq, broadcastId: input.id });
    await this.published('broadcast', tenant.seq, input.id);
    return record;
  }

  listBroadcasts(tenant: Tenant): Promise<BroadcastRecord[]> {
    return this.store.listBroadcasts(tenant.seq);
  }

  async getBroadcast(tenant: Tenant, id: string): Promise<BroadcastRecord> {
    return found(await this.store.getBroadcast(tenant.seq, id), `No broadcast "${id}".`);
  }

  async updateBroadcast(tenant: Tenant, id: string, patch: { campaignId?: number; title?: string | null }): Promise<BroadcastRecord> {
    if (patch.campaignId !== undefined) await this.requireCampaign(tenant, patch.campaignId);
    const record = found(await this.store.updateBroadcast(tenant.seq, id, patch), `No broadcast "${id}".`);
    fanOut(this.bus, 'broadcast.registered', { tenantSeq: tenant.seq, broadcastId: id });
    await this.published('broadcast', tenant.seq, id);
    return record;
  }

  async createOverlay(tenant: Tenant, broadcastId: string, body: unknown): Promise<Overlay> {
    await this.getBroadcast(tenant, broadcastId);
    const content = await this.checkOverlay(tenant, body);
    const now = this.clock.now();
    requireFutureClose(content, now);
    const record: OverlayRecord = {
      tenantSeq: tenant.seq,
      broadcastId,
      id: `${content.type === 'sponsor_moment' ? 'sm' : content.type.slice(0, 4)}_${randomBase62(12, this.random)}`,
      type: content.type,
      content,
      active: false,
      createdAt: now,
      updatedAt: now,
      shownAt: null,
    };
    await this.store.createOverlay(record);
    this.polls?.remember(record);
    await this.published('overlay', tenant.seq, record.id);
    return this.view(record);
  }

  async listOverlays(tenant: Tenant, broadcastId: string): Promise<Overlay[]> {
    await this.getBroadcast(tenant, broadcastId);
    return overlayViews(this.store, await this.store.listOverlays(tenant.seq, broadcastId));
  }

  async getOverlay(tenant: Tenant, broadcastId: string, id: string): Promise<Overlay> {
    return this.view(await this.overlayRecord(tenant, broadcastId, id));
  }

  /**
   * Replaces an overlay's content (same type). A poll that viewers are voting on cannot change,
   * except its `closesAt`. A new `closesAt` must lie ahead, and never void counted votes.
   */
  updateOverlay(tenant: Tenant, broadcastId: string, id: string, body: unknown): Promise<Overlay> {
    return this.overlayTurns.run(overlayKey(tenant, id), () => this.replaceOverlay(tenant, broadcastId, id, body));
  }

  private async replaceOverlay(tenant: Tenant, broadcastId: string, id: string, body: unknown): Promise<Overlay> {
    const current = await this.overlayRecord(tenant, broadcastId, id);
    const content = await this.checkOverlay(tenant, { ...(body as object), type: current.type });
    const closesAt = closesAtOf(content);
    const closeChanged = closesAt !== undefined && Date.parse(closesAt) !== Date.parse(closesAtOf(current.content) ?? '');
    if (current.type === 'poll' && current.active && !samePoll(current.content, content)) {
      throw new SvcError('conflict', 'A poll cannot change while it is shown (except its closesAt); hide it first or create a new poll.');
    }
    if (closeChanged) {
      const now = this.clock.now();
      // A stored vote received after the new closing time would stop counting.
      if (current.type === 'poll' && Date.parse(closesAt) <= now && (await this.hasVotes(tenant, broadcastId, id))) {
        throw new SvcError('conflict', 'A poll that has votes cannot close in the past: its votes would no longer count.');
      }
      requireFutureClose(content, now);
    }
    if (current.type === 'poll' && !samePoll(current.content, content) && (await this.hasVotes(tenant, broadcastId, id))) {
      // Votes name an option by index and label: new options would void them or give them another meaning.
      throw new SvcError('conflict', 'A poll that has votes cannot change its question or options; create a new poll.');
    }
    const record = found(await this.store.updateOverlay(tenant.seq, id, { content }, this.clock.now()), `No overlay "${id}".`);
    this.polls?.remember(record);
    await this.published('overlay', tenant.seq, id);
    const overlay = await this.view(record);
    if (record.active) this.publish(tenant, broadcastId, { kind: 'update', overlay });
    return overlay;
  }

  deleteOverlay(tenant: Tenant, broadcastId: string, id: string): Promise<void> {
    return this.overlayTurns.run(overlayKey(tenant, id), () => this.removeOverlay(tenant, broadcastId, id));
  }

  private async removeOverlay(tenant: Tenant, broadcastId: string, id: string): Promise<void> {
    await this.overlayRecord(tenant, broadcastId, id);
    await this.store.deleteOverlay(tenant.seq, id);
    this.polls?.forget(tenant.seq, id);
    await this.published('overlay', tenant.seq, id);
    // Told even when it was hidden as read here: a show through another node may have been
    // stored since and reach rooms later; rooms drop it after the deletion.
    this.publish(tenant, broadcastId, { kind: 'hide', overlayId: id, hiddenAt: new Date(this.clock.now()).toISOString(), deleted: true });
  }

  /** Shows or hides an overlay; a show records its time (`shownAt`), a hide tells viewers its time (`hiddenAt`). */
  setActive(tenant: Tenant, broadcastId: string, id: string, active: boolean): Promise<Overlay> {
    return this.overlayTurns.run(overlayKey(tenant, id), () => this.showOrHide(tenant, broadcastId, id, active));
  }

  private async showOrHide(tenant: Tenant, broadcastId: string, id: string, active: boolean): Promise<Overlay> {
    const current = await this.overlayRecord(tenant, broadcastId, id);
    const now = this.clock.now();
    // Shown again while on screen, it keeps the moment it was first shown: a viewer behind the
    // live edge would otherwise lose it until the video reached the new moment.
    const record = found(await this.store.updateOverlay(tenant.seq, id, active && !current.active ? { active, shownAt: now } : { active }, now), `No overlay "${id}".`);
    if (!active) {
      // Told even when it was hidden as read here: a show through another node may have been
      // stored since, and reach rooms later than this hide. Rooms order the two by `updatedAt`,
      // and tell viewers of a hide only when it was on screen (hidden twice, it goes once).
      this.publish(tenant, broadcastId, { kind: 'hide', overlayId: id, hiddenAt: new Date(now).toISOString(), updatedAt: new Date(record.updatedAt).toISOString() });
      return this.view(record);
    }
    const overlay = await this.view(record);
    this.publish(tenant, broadcastId, { kind: 'show', overlay });
    return overlay;
  }

  private published(kind: MetadataChangeKind, tenantSeq: number, id: string): Promise<void> {
    return this.changes?.publish({ kind, tenantSeq, id }) ?? Promise.resolve();
  }

  private applyLater(job: () => Promise<void>): void {
    // A failed read (the database unreachable) leaves the poll as it was; the feed then reports
    // missed changes once it is back, and every poll is read again.
    this.applyingChanges = this.applyingChanges.then(job).catch(() => undefined);
  }

  private async view(record: OverlayRecord): Promise<Overlay> {
    return (await overlayViews(this.store, [record]))[0]!;
  }

  private async hasVotes(tenant: Tenant, broadcastId: string, pollId: string): Promise<boolean> {
    return (await this.interactions.listInteractions(tenant.seq, broadcastId)).some((i) => i.kind === 'vote' && i.overlayId === pollId);
  }

  private publish(tenant: Tenant, broadcastId: string, change: ContentChange): void {
    fanOut(this.bus, 'content.changed', { tenantSeq: tenant.seq, broadcastId, change });
  }

  private async overlayRecord(tenant: Tenant, broadcastId: string, id: string): Promise<OverlayRecord> {
    const record = await this.store.getOverlay(tenant.seq, id);
    if (!record || record.broadcastId !== broadcastId) throw new SvcError('not_found', `No overlay "${id}" in broadcast "${broadcastId}".`);
    return record;
  }

  private async checkOverlay(tenant: Tenant, body: unknown): Promise<OverlayContent> {
    const content = this.validator.validate(body);
    if ((content.type === 'sponsor_moment' || content.type === 'product') && content.sponsorId !== undefined) {
      if (!(await this.store.getSponsor(tenant.seq, content.sponsorId))) {
        throw new SvcError('validation_failed', `No sponsor "${content.sponsorId}"; create it first (POST /v1/sponsors).`, {
          errors: [{ path: '/sponsorId', code: 'invalid_value', message: 'is not a known sponsor' }],
        });
      }
    }
    return withCanonicalTimes(content);
  }

  /** Refuses (400 validation_failed, naming `field`) a campaign id the tenant has not created. */
  async requireCampaign(tenant: Tenant, campaignId: number, field = 'campaignId'): Promise<void> {
    if (!(await this.store.getCampaign(tenant.seq, campaignId))) {
      throw new SvcError('validation_failed', `No campaign ${campaignId}; create it first (POST /v1/campaigns).`, {
        errors: [{ path: `/${field}`, code: 'invalid_value', message: 'is not a known campaign' }],
      });
    }
  }
}

/**
 * Times as one form (`2030-01-01T12:00:00.000Z`): the date-time format also admits a space for
 * the `T`, lower-case letters and `+0100` offsets, which not every viewer's browser reads.
 */
function withCanonicalTimes(content: OverlayContent): OverlayContent {
  const canonical = (time: string) => {
    const ms = Date.parse(time);
    return Number.isFinite(ms) ? new Date(ms).toISOString() : time;
  };
  if ((content.type === 'poll' || content.type === 'contest') && content.closesAt !== undefined) return { ...content, closesAt: canonical(content.closesAt) };
  if (content.type === 'lineup') return { ...content, items: content.items.map((item) => (item.at === undefined ? item : { ...item, at: canonical(item.at) })) };
  return content;
}

/** An overlay's key among the changes waiting their turn: ids are unique within a tenant. */
function overlayKey(tenant: Tenant, id: string): string {
  return `${tenant.seq}:${id}`;
}

function closesAtOf(content: OverlayContent): string | undefined {
  return content.type === 'poll' || content.type === 'contest' ? content.closesAt : undefined;
}

/** Refuses (400, naming /closesAt) a closing time that is not ahead of `nowMs`. */
function requireFutureClose(content: OverlayContent, nowMs: number): void {
  const closesAt = closesAtOf(content);
  // A date-time that Date cannot represent (a leap second) would never close: refused too.
  if (closesAt !== undefined && !(Date.parse(closesAt) > nowMs)) {
    throw new SvcError('validation_failed', `"closesAt" must lie in the future (server time ${new Date(nowMs).toISOString()}).`, {
      errors: [{ path: '/closesAt', code: 'invalid_value', message: 'must lie in the future' }],
    });
  }
}

function samePoll(a: OverlayContent, b: OverlayContent): boolean {
  return a.type === 'poll' && b.type === 'poll' && a.question === b.question && JSON.stringify(a.options) === JSON.stringify(b.options);
}

function found<T>(value: T | null, message: string): T {
  if (value === null) throw new SvcError('not_found', message);
  return value;
}

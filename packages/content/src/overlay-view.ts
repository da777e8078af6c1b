import type { Overlay, OverlaySponsor } from '@svc/protocol';
import type { ContentStore, OverlayRecord, SponsorRecord } from '@svc/storage';

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * An overlay as the admin API and viewers see it: its content, its state and times, and, for
 * a sponsor moment or product, its sponsor as given (`sponsors`, by id).
 */
export function overlayView(record: OverlayRecord, sponsors: ReadonlyMap<string, SponsorRecord> = new Map()): Overlay {
  const sponsorId = 'sponsorId' in record.content ? record.content.sponsorId : undefined;
  const sponsor = sponsorId === undefined ? undefined : sponsors.get(sponsorId);
  return {
    ...record.content,
    id: record.id,
    broadcastId: record.broadcastId,
    active: record.active,
    createdAt: iso(record.createdAt),
    updatedAt: iso(record.updatedAt),
    shownAt: record.shownAt === null ? null : iso(record.shownAt),
    ...(sponsor ? { sponsor: sponsorView(sponsor) } : {}),
  } as Overlay;
}

/**
 * The views of overlays with their sponsors read now from the store, so that a renamed sponsor
 * or a new logo shows the next time an overlay is read or pushed. The one place where the admin
 * API and the gateway build what they send.
 */
export async function overlayViews(store: Pick<ContentStore, 'getSponsor'>, records: readonly OverlayRecord[]): Promise<Overlay[]> {
  const wanted = new Map<string, { tenantSeq: number; id: string }>();
  for (const record of records) {
    if ('sponsorId' in record.content && record.content.sponsorId !== undefined) {
      wanted.set(record.content.sponsorId, { tenantSeq: record.tenantSeq, id: record.content.sponsorId });
    }
  }
  const sponsors = new Map<string, SponsorRecord>();
  for (const found of await Promise.all([...wanted.values()].map((s) => store.getSponsor(s.tenantSeq, s.id)))) {
    if (found) sponsors.set(found.id, found);
  }
  return records.map((record) => overlayView(record, sponsors));
}

function sponsorView(sponsor: SponsorRecord): OverlaySponsor {
  return { id: sponsor.id, name: sponsor.name, ...(sponsor.logoUrl === null ? {} : { logoUrl: sponsor.logoUrl }) };
}

import { isDeepStrictEqual } from 'node:util';
import type { ContentStore } from './content-store';
import type { DeletionJobStore } from './deletion-job-store';
import type { MetadataImporter } from './metadata-importer';
import type { MetaStore } from './meta-store';
import type { Tenant } from './records';
import type { SessionStore } from './session-store';
import type { WebhookEndpointStore } from './webhook-endpoint-store';

/** The metadata half of a `Storage`: what `copyMetadata` reads on both sides. */
export interface MetadataStores {
  meta: MetaStore;
  content: ContentStore;
  webhookEndpoints: WebhookEndpointStore;
  deletions: DeletionJobStore;
  sessions: SessionStore;
}

/** A source record that the destination holds with other content, or whose key it holds for another record. */
export interface MetadataConflict {
  kind: string;
  /** The record, as an operator finds it: tenant id and record id. */
  record: string;
  reason: string;
}

export interface KindCount {
  kind: string;
  /** Written because the destination did not have them. */
  copied: number;
  /** Already in the destination, equal. */
  unchanged: number;
  /** Different in the destination and replaced (`overwrite`). */
  overwritten: number;
  conflicts: number;
  /** Records of the copied tenants in the source, and in the destination after the copy. */
  sourceCount: number;
  destinationCount: number;
}

export interface MetadataCopyReport {
  kinds: KindCount[];
  conflicts: MetadataConflict[];
  /** Every kind counts as many records in the destination as in the source, for the copied tenants. */
  countsMatch: boolean;
}

interface Kind<R> {
  name: string;
  list(stores: MetadataStores, tenantSeq: number): Promise<R[]>;
  key(record: R): string;
  write(importer: MetadataImporter, record: R, overwrite: boolean): Promise<boolean>;
}

const kind = <R>(k: Kind<R>): Kind<unknown> => k as Kind<unknown>;

/** Every metadata kind below tenants, in an order where each record's references come first. */
const KINDS: Array<Kind<unknown>> = [
  kind({ name: 'api keys', list: (s, t) => s.meta.listApiKeys(t), key: (r) => r.id, write: (i, r, o) => i.importApiKey(r, o) }),
  kind({ name: 'admin tokens', list: (s, t) => s.meta.listAdminTokens(t), key: (r) => r.id, write: (i, r, o) => i.importAdminToken(r, o) }),
  kind({ name: 'campaigns', list: (s, t) => s.content.listCampaigns(t), key: (r) => String(r.id), write: (i, r, o) => i.importCampaign(r, o) }),
  kind({ name: 'sponsors', list: (s, t) => s.content.listSponsors(t), key: (r) => r.id, write: (i, r, o) => i.importSponsor(r, o) }),
  // The broadcast registry (MetaStore.resolveBroadcasts) and the content's broadcasts are one table.
  kind({ name: 'broadcasts', list: (s, t) => s.content.listBroadcasts(t), key: (r) => r.id, write: (i, r, o) => i.importBroadcast(r, o) }),
  kind({
    name: 'overlays',
    // An overlay always belongs to a broadcast of its tenant (ContentService checks), and broadcasts are never deleted.
    list: async (s, t) => (await Promise.all((await s.content.listBroadcasts(t)).map((b) => s.content.listOverlays(t, b.id)))).flat(),
    key: (r) => r.id,
    write: (i, r, o) => i.importOverlay(r, o),
  }),
  kind({ name: 'webhook endpoints', list: (s, t) => s.webhookEndpoints.listEndpoints(t), key: (r) => r.id, write: (i, r, o) => i.importWebhookEndpoint(r, o) }),
  kind({ name: 'deletion jobs', list: (s, t) => s.deletions.listJobs(t), key: (r) => r.id, write: (i, r, o) => i.importDeletionJob(r, o) }),
  kind({ name: 'dashboard sessions', list: (s, t) => s.sessions.listSessions(t), key: (r) => r.idHash, write: (i, r, o) => i.importSession(r, o) }),
];

export interface MetadataCopyOptions {
  /** Replace records the destination holds with other content (default false: report them as conflicts). */
  overwrite?: boolean;
}

/**
 * Copies every metadata record of `source` into `destination` (through `importer`, which
 * writes into it), keeping ids and tenant seqs: events elsewhere refer to them. Idempotent: a
 * record the destination already holds, equal, is left as it is. A record held with other
 * content is a conflict, left alone unless `overwrite`. A tenant whose seq or id the
 * destination gives to another tenant is never written over: it is a conflict and its records
 * are not copied. Ends by counting each kind on both sides for the tenants copied.
 */
export async function copyMetadata(
  source: MetadataStores,
  destination: MetadataStores,
  importer: MetadataImporter,
  options: MetadataCopyOptions = {},
): Promise<MetadataCopyReport> {
  const overwrite = options.overwrite ?? false;
  const conflicts: MetadataConflict[] = [];
  const tenantCount = emptyCount('tenants');
  const copied: Tenant[] = [];

  const existing = await destination.meta.listTenants();
  for (const tenant of await source.meta.listTenants()) {
    const atSeq = existing.find((t) => t.seq === tenant.seq);
    const withId = existing.find((t) => t.id === tenant.id);
    const clash = (atSeq && atSeq.id !== tenant.id) || (withId && withId.seq !== tenant.seq);
    if (clash) {
      const reason = atSeq && atSeq.id !== tenant.id
        ? `its seq ${tenant.seq} belongs to tenant "${atSeq.id}" in the destination; its records are not copied`
        : `the destination has it under seq ${withId!.seq}; its records are not copied`;
      conflicts.push({ kind: 'tenants', record: `${tenant.id} (seq ${tenant.seq})`, reason });
      tenantCount.conflicts++;
      continue;
    }
    copied.push(tenant);
    await place(tenantCount, conflicts, {
      label: `${tenant.id} (seq ${tenant.seq})`,
      found: atSeq ?? null,
      wanted: tenant,
      write: (o) => importer.importTenant(tenant, o),
      overwrite,
    });
  }
  await importer.moveTenantNumbering();
  tenantCount.sourceCount = copied.length;
  const seqs = new Set(copied.map((t) => t.seq));
  tenantCount.destinationCount = (await destination.meta.listTenants()).filter((t) => seqs.has(t.seq)).length;

  const kinds = [tenantCount];
  for (const k of KINDS) {
    const count = emptyCount(k.name);
    for (const tenant of copied) {
      const held = new Map((await k.list(destination, tenant.seq)).map((r) => [k.key(r), r]));
      const records = await k.list(source, tenant.seq);
      for (const record of records) {
        await place(count, conflicts, {
          label: `${tenant.id}/${k.key(record)}`,
          found: held.get(k.key(record)) ?? null,
          wanted: record,
          write: (o) => k.write(importer, record, o),
          overwrite,
        });
      }
      count.sourceCount += records.length;
      count.destinationCount += (await k.list(destination, tenant.seq)).length;
    }
    kinds.push(count);
  }
  return { kinds, conflicts, countsMatch: kinds.every((k) => k.sourceCount === k.destinationCount) };
}

function emptyCount(kind: string): KindCount {
  return { kind, copied: 0, unchanged: 0, overwritten: 0, conflicts: 0, sourceCount: 0, destinationCount: 0 };
}

interface Placement {
  label: string;
  /** The destination's record under the same key, or null. */
  found: unknown;
  wanted: unknown;
  write(overwrite: boolean): Promise<boolean>;
  overwrite: boolean;
}

/** Writes one record where the destination lacks it, and counts what happened. */
async function place(count: KindCount, conflicts: MetadataConflict[], p: Placement): Promise<void> {
  if (p.found === null) {
    if (await p.write(false)) count.copied++;
    else {
      // Not under its key in this tenant, yet refused: another record holds its key elsewhere, or a unique value of it.
      count.conflicts++;
      conflicts.push({ kind: count.kind, record: p.label, reason: 'the destination holds its id or a unique value of it for another record' });
    }
    return;
  }
  if (isDeepStrictEqual(p.found, p.wanted)) {
    count.unchanged++;
    return;
  }
  if (p.overwrite && (await p.write(true))) {
    count.overwritten++;
    return;
  }
  count.conflicts++;
  conflicts.push({ kind: count.kind, record: p.label, reason: `the destination holds it with other content: ${differences(p.found, p.wanted)}` });
}

/** Names of the fields that differ, for the operator. */
function differences(found: unknown, wanted: unknown): string {
  const a = found as Record<string, unknown>;
  const b = wanted as Record<string, unknown>;
  const fields = [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((f) => !isDeepStrictEqual(a[f], b[f]));
  return fields.join(', ');
}

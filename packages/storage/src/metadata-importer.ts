import type { BroadcastRecord, CampaignRecord, OverlayRecord, SponsorRecord } from './content-store';
import type { DeletionJob } from './deletion-job-store';
import type { AdminTokenRecord, ApiKeyRecord, Tenant } from './records';
import type { SessionRecord } from './session-store';
import type { WebhookEndpointRecord } from './webhook-endpoint-store';

/**
 * Writes metadata records into a database as they are, every field kept (ids, tenant seqs,
 * times, revocations, secrets, leases aside), for moving an installation to another backend.
 * Each write inserts the record unless its key is taken and answers whether it wrote; with
 * `overwrite` a record under the same key is replaced by the one given.
 */
export interface MetadataImporter {
  /** Keeps `tenant.seq`; a tenant is never written over another with a different id or seq. */
  importTenant(tenant: Tenant, overwrite: boolean): Promise<boolean>;
  /** Moves the tenant numbering past the largest seq, so that tenants created later get new ones. */
  moveTenantNumbering(): Promise<void>;
  importApiKey(record: ApiKeyRecord, overwrite: boolean): Promise<boolean>;
  importAdminToken(record: AdminTokenRecord, overwrite: boolean): Promise<boolean>;
  importCampaign(record: CampaignRecord, overwrite: boolean): Promise<boolean>;
  importSponsor(record: SponsorRecord, overwrite: boolean): Promise<boolean>;
  importBroadcast(record: BroadcastRecord, overwrite: boolean): Promise<boolean>;
  importOverlay(record: OverlayRecord, overwrite: boolean): Promise<boolean>;
  importWebhookEndpoint(record: WebhookEndpointRecord, overwrite: boolean): Promise<boolean>;
  /** A job comes without a lease: a running one is claimed by the first node that looks. */
  importDeletionJob(job: DeletionJob, overwrite: boolean): Promise<boolean>;
  importSession(session: SessionRecord, overwrite: boolean): Promise<boolean>;
}

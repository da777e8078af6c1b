import type { MetadataChangeFeed } from '@svc/storage';
import type { Services } from './services';

/**
 * Makes every per-node cache of metadata follow `feed`: credentials and tenant settings
 * (`tenants`, which also closes this node's sockets of a key revoked elsewhere), webhook
 * endpoints (`webhooks`), the poll catalogue (`content`) and the campaign of each broadcast
 * (`ingest`); each also publishes its own changes on it. Pass `storage.changes`: in process for
 * the embedded default (nothing changes), LISTEN/NOTIFY on the metadata database in cluster
 * mode. Call once, before the node serves.
 */
export function followMetadataChanges(feed: MetadataChangeFeed, services: Pick<Services, 'tenants' | 'webhooks' | 'content' | 'ingest'>): void {
  services.tenants.followChanges(feed);
  services.webhooks.followChanges(feed);
  services.content.followChanges(feed);
  services.ingest.followChanges(feed);
}

/**
 * What kind of metadata changed. Each names the caches that must forget it:
 * - `api_key`, `admin_token`: credential lookups (`id` is the key's or token's record id);
 * - `tenant`: a tenant's name, retention or settings (the SDK config is built from them);
 * - `webhook_endpoint`: an endpoint created, changed, disabled or deleted (`id` is its id);
 * - `overlay`: an overlay created, changed or deleted (`id`; polls are checked by ingest);
 * - `broadcast`: a broadcast created or moved to another campaign (`id`).
 */
export type MetadataChangeKind = 'api_key' | 'admin_token' | 'tenant' | 'webhook_endpoint' | 'overlay' | 'broadcast';

export const METADATA_CHANGE_KINDS: readonly MetadataChangeKind[] = ['api_key', 'admin_token', 'tenant', 'webhook_endpoint', 'overlay', 'broadcast'];

/** A notice that something changed, small enough for a NOTIFY payload: never the data itself. */
export interface MetadataChange {
  kind: MetadataChangeKind;
  tenantSeq: number;
  /** The changed record's id, when the change concerns one record. */
  id?: string;
}

export interface MetadataChangeListener {
  /**
   * A change was committed. `fromThisNode` is true for changes published through this same
   * feed: the service that made one has already updated its own caches.
   */
  changed(change: MetadataChange, fromThisNode: boolean): void;
  /**
   * Notices may have been lost (the feed was cut off from the database and is back): forget or
   * reload everything cached, as any of it may be stale.
   */
  missedChanges(): void;
}

/**
 * Notices of metadata changes between the nodes that share one metadata database, so that each
 * node's in-memory caches (credentials, endpoints, polls, …) forget what another node changed.
 * Publish after the change has been committed. Delivery is best effort and prompt (milliseconds
 * on PostgreSQL); when notices may have been lost, every listener is told `missedChanges`.
 * Caches keep a time bound of their own as a last resort.
 */
export interface MetadataChangeFeed {
  /** Tells every node, this one included. Never rejects: a notice that cannot be sent yet is retried. */
  publish(change: MetadataChange): Promise<void>;
  /** Calls `listener` for every change from now on; returns the function that stops it. */
  subscribe(listener: MetadataChangeListener): () => void;
  close(): Promise<void>;
}

/** Calls each listener, so that one that throws does not keep the notice from the others. */
export function tellListeners(listeners: Iterable<MetadataChangeListener>, call: (listener: MetadataChangeListener) => void): void {
  for (const listener of listeners) {
    try {
      call(listener);
    } catch {
      // A listener's failure is its own; the others must still hear of the change.
    }
  }
}

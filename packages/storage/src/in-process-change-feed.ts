import { tellListeners, type MetadataChange, type MetadataChangeFeed, type MetadataChangeListener } from './metadata-change-feed';

/**
 * The change feed of a single process (the embedded default): a change reaches this process's
 * listeners only, at once, as `fromThisNode`. Nothing else can change the metadata, so nothing
 * is ever missed.
 */
export class InProcessChangeFeed implements MetadataChangeFeed {
  private readonly listeners = new Set<MetadataChangeListener>();

  async publish(change: MetadataChange): Promise<void> {
    tellListeners(this.listeners, (listener) => listener.changed(change, true));
  }

  subscribe(listener: MetadataChangeListener): () => void {
    // A wrapper per subscription, so that subscribing one listener twice needs two stops.
    const entry: MetadataChangeListener = { changed: (c, own) => listener.changed(c, own), missedChanges: () => listener.missedChanges() };
    this.listeners.add(entry);
    return () => this.listeners.delete(entry);
  }

  async close(): Promise<void> {
    this.listeners.clear();
  }
}

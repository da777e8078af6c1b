/** Which connected viewers to count: those of a broadcast, a campaign and a country, when given. */
export interface LiveViewerFilter {
  broadcastId?: string;
  campaignId?: number;
  country?: string;
}

/** Counts viewers connected now (the realtime gateway of this node). */
export interface LiveViewerCounts {
  liveViewers(tenantSeq: number, filter: LiveViewerFilter): Promise<number>;
  /** Viewers of each of the tenant's broadcasts that has any. */
  liveViewersByBroadcast(tenantSeq: number): Promise<Map<string, number>>;
}

/**
 * Where the dashboard reads live viewer counts: a read answered by whoever provides it (the
 * gateway registers itself), not a notification, so it is no bus topic. Without a provider it
 * answers 0 viewers. In cluster mode the provider will sum the per-node counts.
 */
export class LiveViewerRegistry implements LiveViewerCounts {
  private source: LiveViewerCounts | null = null;

  /** Answers reads from `source` from now on; returns the function that withdraws it. */
  provide(source: LiveViewerCounts): () => void {
    this.source = source;
    return () => {
      if (this.source === source) this.source = null;
    };
  }

  async liveViewers(tenantSeq: number, filter: LiveViewerFilter): Promise<number> {
    return this.source ? this.source.liveViewers(tenantSeq, filter) : 0;
  }

  async liveViewersByBroadcast(tenantSeq: number): Promise<Map<string, number>> {
    return this.source ? this.source.liveViewersByBroadcast(tenantSeq) : new Map();
  }
}

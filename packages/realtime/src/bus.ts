import type { Overlay } from '@svc/protocol';

/**
 * Fan-out between the parts of the service that change what viewers see (admin API, votes)
 * and the gateway connections that show it. The embedded default delivers in-process; a
 * cluster backend (NATS) will carry the same messages between nodes.
 */
export interface Bus {
  publish(channel: string, message: unknown): void;
  /** Returns the function that ends the subscription. */
  subscribe(channel: string, handler: (message: unknown) => void): () => void;
}

export class LocalBus implements Bus {
  private readonly handlers = new Map<string, Set<(message: unknown) => void>>();

  publish(channel: string, message: unknown): void {
    for (const handler of this.handlers.get(channel) ?? []) handler(message);
  }

  subscribe(channel: string, handler: (message: unknown) => void): () => void {
    let set = this.handlers.get(channel);
    if (!set) this.handlers.set(channel, (set = new Set()));
    set.add(handler);
    return () => {
      set.delete(handler);
      if (!set.size) this.handlers.delete(channel);
    };
  }
}

/** Channel of one broadcast's content changes. */
export function contentChannel(tenantSeq: number, broadcastId: string): string {
  return `content:${tenantSeq}:${broadcastId}`;
}

/** What the admin side publishes on a content channel. */
export type ContentChange =
  | { kind: 'show' | 'update'; overlay: Overlay }
  | { kind: 'hide'; overlayId: string; /** ISO server time of the hide. */ hiddenAt: string };

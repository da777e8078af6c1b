import type { Overlay } from './overlays';

/** WebSocket subprotocol of this version of the realtime protocol (docs/realtime-protocol.md). */
export const REALTIME_SUBPROTOCOL = 'svc.v1';

/** Close codes the gateway uses; 4xxx mirror HTTP statuses. */
export const CLOSE_CODES = {
  /** Server shutting down; reconnect with backoff. */
  goingAway: 1001,
  /** The message was larger than the gateway accepts. */
  messageTooBig: 1009,
  /** Server overloaded (tenant connection limit); reconnect later. */
  tryAgainLater: 1013,
  /** Missing or malformed query parameters. */
  badRequest: 4400,
  /** Missing, unknown or revoked API key. */
  invalidApiKey: 4401,
  /** The page's origin is not among the tenant's allowed origins. */
  originNotAllowed: 4403,
  /** No offered subprotocol is one this server speaks. */
  unsupportedProtocol: 4406,
  /** No pong to the server's heartbeat in time. */
  heartbeatTimeout: 4408,
  /** A newer connection of the same session took over. */
  replaced: 4409,
  /** Too many messages for too long, or a client too slow to read its updates. */
  policyViolation: 4429,
} as const;

export interface PollResults {
  pollId: string;
  counts: number[];
  total: number;
}

/** What the server sends. Every frame is one JSON object with a `type`. */
export type ServerMessage =
  | {
      type: 'welcome';
      protocol: typeof REALTIME_SUBPROTOCOL;
      session: { id: string; resumed: boolean };
      broadcast: { id: string; campaignId: number };
      overlays: Overlay[];
      pollResults: PollResults[];
      /** What this viewer already did: options voted per poll, contests entered. */
      viewer: { votes: Record<string, number>; contests: string[] };
      viewers: number;
      serverTime: string;
      heartbeatIntervalMs: number;
    }
  | { type: 'overlay.show'; overlay: Overlay }
  | { type: 'overlay.update'; overlay: Overlay }
  | { type: 'overlay.hide'; overlayId: string; /** Server time of the hide, so a player behind the live edge hides it in step. */ hiddenAt: string }
  | ({ type: 'poll.results' } & PollResults)
  | { type: 'viewers'; count: number }
  | { type: 'ack'; ids: string[]; requestId?: string; rejected?: Array<{ index: number; code: string; detail: string }> }
  | { type: 'error'; code: string; detail: string; requestId?: string }
  | { type: 'pong'; serverTime: string; requestId?: string };

/** What a client may send. `requestId` (optional, ≤ 64 chars) is echoed in the answer. */
export type ClientMessage =
  | { type: 'track'; events: unknown[]; sentAt?: string; requestId?: string }
  | { type: 'poll.vote'; pollId: string; optionIndex: number; requestId?: string }
  | { type: 'contest.enter'; contestId: string; requestId?: string }
  | { type: 'ping'; requestId?: string };

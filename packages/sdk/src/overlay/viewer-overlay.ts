import type { Overlay } from '@svc/protocol';

/** An overlay as viewers receive it: the admin's content plus what the server adds for them. */
export type ViewerOverlay = Overlay & {
  /** Server time it was last shown: a viewer behind the live edge shows it when the video gets there. */
  shownAt?: string | null;
  /** Polls and contests: when they stop taking votes or entries (server time). */
  closesAt?: string;
  /** Sponsor moments and sponsored products: the sponsor record. */
  sponsor?: { id: string; name: string; logoUrl?: string };
};

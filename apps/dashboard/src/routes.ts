import { renderBroadcasts } from './broadcasts-page';
import { renderEvents } from './events-page';
import { renderOverview } from './overview-page';
import { renderRejected } from './rejected-page';
import { renderSettings } from './settings-page';

/** Renders a page into its container; may return a function that stops what it started (a live stream). */
export type PageRender = (root: HTMLElement) => Promise<unknown>;

export interface Route {
  label: string;
  render: PageRender;
}

/** The pages of the app by path, in the order of the nav. The server serves the app on each of these paths. */
export const ROUTES: Record<string, Route> = {
  '/': { label: 'Overview', render: renderOverview },
  '/events': { label: 'Events', render: renderEvents },
  '/broadcasts': { label: 'Broadcasts', render: renderBroadcasts },
  '/rejected': { label: 'Rejected events', render: renderRejected },
  '/settings': { label: 'Settings', render: renderSettings },
};

import { SvcClient, type ConfigureOptions, type TrackFields } from './client';
import type { SvcConfig } from './config-client';
import { SvcError } from './errors';
import { defineOverlayElement, OVERLAY_TAG, type OverlayElement } from './overlay-element';
import type { PlayerSource } from './overlay/player-clock';
import { warnOnce } from './shims';

export const VERSION = '0.2.0-beta';

let client: SvcClient | null = null;

/** 0.1.x options that still work for now. */
interface LegacyOptions {
  campaignApiKey?: string;
  autoDiscover?: boolean;
  configFile?: string;
}

/** The origin the SDK was loaded from, the default place of the service. */
function defaultBaseURL(): string {
  if (typeof document !== 'undefined') {
    const script = document.currentScript as HTMLScriptElement | null;
    if (script?.src) return new URL(script.src).origin;
  }
  try {
    const here = new URL(import.meta.url);
    if (here.protocol === 'http:' || here.protocol === 'https:') return here.origin;
  } catch {
    // import.meta.url is not a URL in some bundles.
  }
  return typeof location !== 'undefined' ? location.origin : 'http://localhost:8080';
}
// Captured at load time: document.currentScript is only set while the script runs.
const LOADED_FROM = defaultBaseURL();

function requireClient(): SvcClient {
  if (!client) throw new SvcError('not_configured', 'Call SvcSDK.configure({ apiKey }) first.');
  return client;
}

/**
 * The SDK entry point. One call with the API key configures everything else at run time.
 *
 * ```js
 * SvcSDK.configure({ apiKey: 'svc_pk_…' });
 * await SvcSDK.setContent('match-42');
 * player.append(SvcEngagementOverlay());
 * ```
 */
export const SvcSDK = {
  version: VERSION,

  /**
   * Synchronous: starts the one configuration request of this start (a cached configuration
   * is used at once and revalidated). Accepts the key or `{ apiKey, baseURL?, userId?, styleNonce? }`.
   */
  configure(options: string | (ConfigureOptions & LegacyOptions)): void {
    const opts: ConfigureOptions & LegacyOptions = typeof options === 'string' ? { apiKey: options } : options;
    if (!opts?.apiKey || typeof opts.apiKey !== 'string') throw new SvcError('invalid_argument', 'configure needs the API key: SvcSDK.configure({ apiKey }).');
    if (opts.campaignApiKey !== undefined) warnOnce('The campaignApiKey option', 'remove it; the API key alone is enough');
    if (opts.autoDiscover !== undefined) warnOnce('The autoDiscover option', 'remove it; discovery is always on');
    if (opts.configFile !== undefined) warnOnce('svc-config.json', 'remove the file; the configuration comes from the server');
    if (client && client.apiKey === opts.apiKey) return;
    client = new SvcClient(opts.apiKey, (opts.baseURL ?? LOADED_FROM).replace(/\/+$/, ''), opts);
  },

  /** Resolves with the configuration (cached or fetched). */
  ready(): Promise<SvcConfig> {
    return requireClient().ready();
  },

  /** Joins a broadcast (the content id of the stream): resolves once the server welcomed this viewer. */
  setContent(id: string): Promise<void> {
    return requireClient().setContent(id);
  },

  /** Synchronous: leaves the broadcast (`broadcast.left`), sends queued events, closes the socket. */
  disconnect(): void {
    client?.disconnect();
  },

  /** Sets or clears the opaque id of the signed-in user for the next events. */
  setUserId(userId: string | null): void {
    requireClient().setUserId(userId);
  },

  /** Tracks an event of the host app (e.g. a confirmed purchase); returns its eventId. */
  track(event: string, fields?: TrackFields): string {
    return requireClient().track(event, fields);
  },

  /** Listens to SDK events: `config`, `welcome`, `error`, `track`, `state`, and each tracked event name. */
  on(name: string, listener: (payload: unknown) => void): void {
    requireClient().on(name, listener);
  },

  off(name: string, listener: (payload: unknown) => void): void {
    client?.off(name, listener);
  },

  /** For tests and diagnostics. */
  get client(): SvcClient | null {
    return client;
  },
};

export interface OverlayOptions {
  /**
   * The viewer's player, to show each overlay when the video reaches the moment it was shown
   * (players run 5–30 s behind the live edge): a `<video>`, an hls.js instance, or
   * `{ latency: () => seconds }` / `{ playheadDate: () => Date }` (docs/overlay.md, "In step with
   * the video"). Without it, overlays show as soon as the server sends them.
   */
  player?: PlayerSource | null;
}

/** The overlay element to place over the video player (its box decides the layout). */
export function SvcEngagementOverlay(options: OverlayOptions = {}): OverlayElement {
  if (typeof document === 'undefined') throw new SvcError('invalid_argument', 'SvcEngagementOverlay needs a browser document.');
  defineOverlayElement(() => client);
  const element = document.createElement(OVERLAY_TAG) as OverlayElement;
  if (options.player) element.player = options.player;
  return element;
}

/** 0.1.x: replaced by SvcSDK.configure. */
export const ConfigurationLoader = {
  loadConfiguration(options: { userCountryCode?: string; apiKey?: string } = {}): Promise<SvcConfig> {
    warnOnce('ConfigurationLoader.loadConfiguration', 'call SvcSDK.configure({ apiKey }) once at start-up');
    if (options.apiKey) SvcSDK.configure({ apiKey: options.apiKey });
    return SvcSDK.ready();
  },
};

/** 0.1.x: the broadcast context value. */
export class BroadcastContext {
  constructor(readonly broadcastId: string) {}
}

/** 0.1.x: replaced by SvcSDK.setContent. */
export function setBroadcastContext(context: BroadcastContext | { broadcastId: string }): Promise<void> {
  warnOnce('setBroadcastContext', 'call SvcSDK.setContent(id)');
  return SvcSDK.setContent(context.broadcastId);
}

/**
 * SvcCore 0.2.0-beta: the zero-config client SDK. Safe to import where there is no `window`;
 * nothing touches the DOM until it is used.
 */
export { SvcSDK, SvcEngagementOverlay, ConfigurationLoader, BroadcastContext, setBroadcastContext, VERSION } from './svc-sdk';
export { SvcError, type SdkErrorCode } from './errors';
export type { OverlayOptions } from './svc-sdk';
export type { OverlayElement } from './overlay-element';
export type { PlayerSource } from './overlay/player-clock';
export type { SvcConfig } from './config-client';
export type { ConfigureOptions, TrackFields, CommerceFields } from './client';
export { uuidv7, ulid } from './ids';

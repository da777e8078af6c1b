import { createHash } from 'node:crypto';
import type { SdkConfig } from '@svc/protocol';
import type { Tenant } from '@svc/storage';

export type { SdkConfig };

/** `restAPIBaseURL` is the public URL; `webSocketBaseURL` the same origin with ws/wss. */
export function buildSdkConfig(tenant: Tenant, publicUrl: string, country: string | null): SdkConfig {
  const rest = publicUrl.replace(/\/+$/, '');
  const { settings } = tenant;
  return {
    webSocketBaseURL: rest.replace(/^http/, 'ws'),
    restAPIBaseURL: rest,
    theme: { primaryColor: settings.theme.primaryColor },
    commerceApiKey: settings.commerceApiKey,
    featureFlags: { ...settings.featureFlags },
    localization: { defaultLanguage: settings.localization.defaultLanguage },
    availableMarkets: [...settings.availableMarkets],
    country,
  };
}

/** Strong validator of a config body: changes whenever any field (country included) does. */
export function sdkConfigEtag(body: string): string {
  return `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
}

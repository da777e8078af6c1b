import { COUNTRY_PATTERN, CURRENCY_PATTERN, isTimeZone, SvcError } from '@svc/protocol';
import type { TenantSettings } from '@svc/storage';

/** Raw events are kept this many months unless the contract says otherwise. */
export const DEFAULT_RETENTION_MONTHS = 12;
export const MAX_RETENTION_MONTHS = 120;

export function defaultSettings(commerceApiKey: string): TenantSettings {
  return {
    theme: { primaryColor: '#5B3DF5' },
    featureFlags: { lineup: true, payments: true, polls: true, contests: true, sponsorMoments: true },
    localization: { defaultLanguage: 'en' },
    availableMarkets: ['AT', 'BE', 'CH', 'DE', 'ES', 'FR', 'GB', 'IE', 'IT', 'NL', 'PL', 'PT', 'SE', 'US'],
    fallbackCountry: null,
    defaultCurrency: 'EUR',
    allowedOrigins: [],
    commerceApiKey,
    defaultCampaignId: 1,
  };
}

const flag = { type: 'boolean' } as const;

/**
 * JSON Schema of a settings patch (`PATCH /v1/settings`): every field optional, nested objects
 * merged. Also the documented shape of `GET /v1/settings`.
 */
export const SETTINGS_PATCH_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 200 },
    retentionMonths: { type: 'integer', minimum: 1, maximum: MAX_RETENTION_MONTHS },
    theme: {
      type: 'object',
      additionalProperties: false,
      properties: { primaryColor: { type: 'string', pattern: '^#[0-9A-Fa-f]{6}$' } },
    },
    featureFlags: {
      type: 'object',
      additionalProperties: false,
      properties: { lineup: flag, payments: flag, polls: flag, contests: flag, sponsorMoments: flag },
    },
    localization: {
      type: 'object',
      additionalProperties: false,
      properties: { defaultLanguage: { type: 'string', pattern: '^[a-z]{2}(-[A-Z]{2})?$' } },
    },
    availableMarkets: { type: 'array', maxItems: 250, uniqueItems: true, items: { type: 'string', pattern: COUNTRY_PATTERN } },
    fallbackCountry: { type: ['string', 'null'], pattern: COUNTRY_PATTERN },
    defaultCurrency: { type: 'string', pattern: CURRENCY_PATTERN },
    allowedOrigins: {
      type: 'array',
      maxItems: 100,
      items: { type: 'string', pattern: '^https?://[^/\\s]+$' },
    },
    commerceApiKey: { type: 'string', maxLength: 500 },
    defaultCampaignId: { type: 'integer', minimum: 1 },
    timeZone: {
      type: 'string',
      minLength: 1,
      maxLength: 64,
      description: 'IANA time zone (e.g. Europe/Berlin) of the dashboard: the days of its date filters, its buckets and labels. Default UTC.',
    },
  },
} as const;

export interface SettingsPatch extends Partial<Omit<TenantSettings, 'theme' | 'featureFlags' | 'localization'>> {
  name?: string;
  retentionMonths?: number;
  theme?: Partial<TenantSettings['theme']>;
  featureFlags?: Partial<TenantSettings['featureFlags']>;
  localization?: Partial<TenantSettings['localization']>;
}

/** Applies a validated patch; nested objects are merged, arrays replaced. */
export function mergeSettings(current: TenantSettings, patch: SettingsPatch): TenantSettings {
  if (patch.timeZone !== undefined && !isTimeZone(patch.timeZone)) {
    throw new SvcError('validation_failed', `Invalid timeZone: "${patch.timeZone}" is not an IANA time zone such as Europe/Berlin.`, {
      errors: [{ path: '/timeZone', code: 'invalid_value', message: 'must be an IANA time zone such as Europe/Berlin' }],
    });
  }
  const { name: _name, retentionMonths: _retention, theme, featureFlags, localization, ...flat } = patch;
  return {
    ...current,
    ...flat,
    theme: { ...current.theme, ...theme },
    featureFlags: { ...current.featureFlags, ...featureFlags },
    localization: { ...current.localization, ...localization },
  };
}

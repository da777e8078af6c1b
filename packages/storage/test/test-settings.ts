import type { TenantSettings } from '../src';

/** Settings of a test tenant: every feature on, no market. */
export const TEST_SETTINGS: TenantSettings = {
  theme: { primaryColor: '#000000' },
  featureFlags: { lineup: true, payments: true, polls: true, contests: true, sponsorMoments: true },
  localization: { defaultLanguage: 'en' },
  availableMarkets: [],
  fallbackCountry: null,
  defaultCurrency: 'EUR',
  allowedOrigins: [],
  commerceApiKey: '',
  defaultCampaignId: 1,
};

/** Settings the store contracts write and read back: values that differ from the defaults. */
export const CONTRACT_SETTINGS: TenantSettings = {
  theme: { primaryColor: '#112233' },
  featureFlags: { lineup: true, payments: false, polls: true, contests: true, sponsorMoments: true },
  localization: { defaultLanguage: 'en' },
  availableMarkets: ['DE'],
  fallbackCountry: null,
  defaultCurrency: 'EUR',
  allowedOrigins: [],
  commerceApiKey: 'secret',
  defaultCampaignId: 1,
};

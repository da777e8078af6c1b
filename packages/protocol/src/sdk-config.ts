/** Runtime configuration of `GET /v1/sdk/config` (spec 2.2 plus the viewer's `country`). */
export interface SdkConfig {
  webSocketBaseURL: string;
  restAPIBaseURL: string;
  theme: { primaryColor: string };
  commerceApiKey: string;
  featureFlags: { lineup: boolean; payments: boolean; polls: boolean; contests: boolean; sponsorMoments: boolean };
  localization: { defaultLanguage: string };
  availableMarkets: string[];
  country: string | null;
}

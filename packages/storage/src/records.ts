/** Records the storage layer keeps. Times are epoch milliseconds (UTC). */

export interface TenantSettings {
  theme: { primaryColor: string };
  featureFlags: { lineup: boolean; payments: boolean; polls: boolean; contests: boolean; sponsorMoments: boolean };
  localization: { defaultLanguage: string };
  availableMarkets: string[];
  fallbackCountry: string | null;
  defaultCurrency: string;
  allowedOrigins: string[];
  commerceApiKey: string;
  defaultCampaignId: number;
  /** IANA time zone of the dashboard's days, buckets and labels; `UTC` when absent. */
  timeZone?: string;
}

export interface Tenant {
  /** Internal numeric key; never shown to customers. */
  seq: number;
  /** Public slug, e.g. `demo`. */
  id: string;
  name: string;
  createdAt: number;
  retentionMonths: number;
  settings: TenantSettings;
}

export interface ApiKeyRecord {
  id: string;
  tenantSeq: number;
  key: string;
  name: string;
  createdAt: number;
  revokedAt: number | null;
}

export interface AdminTokenRecord {
  id: string;
  tenantSeq: number;
  /** Hex SHA-256 of the token; the token itself is never stored. */
  tokenHash: string;
  /** First characters of the token, to tell tokens apart in lists. */
  prefix: string;
  name: string;
  createdAt: number;
  revokedAt: number | null;
}

/** One event row as the EventStore writes it. `data` and `items` are JSON text. */
export interface EventRow {
  tenantSeq: number;
  eventId: string;
  event: string;
  userId: string | null;
  sessionId: string;
  broadcastId: string;
  campaignId: number;
  timestampMs: number;
  receivedAtMs: number;
  country: string | null;
  orderId: string | null;
  sponsorId: string | null;
  total: number | null;
  items: string | null;
  data: string;
}

/** A rejected event kept for 30 days with its reason. `payload` has personal data masked. */
export interface QuarantineRow {
  tenantSeq: number;
  id: string;
  receivedAtMs: number;
  code: string;
  detail: string;
  /** JSON text of the field errors. */
  errors: string;
  eventName: string | null;
  userId: string | null;
  payload: string;
}

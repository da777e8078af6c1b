import type { AdminTokenRecord, ApiKeyRecord, Tenant, TenantSettings } from './records';

export interface NewTenant {
  id: string;
  name: string;
  retentionMonths: number;
  settings: TenantSettings;
  createdAt: number;
}

export interface TenantPatch {
  name?: string;
  retentionMonths?: number;
  settings?: TenantSettings;
}

/** Tenants, their credentials and the broadcast registry. */
export interface MetaStore {
  createTenant(tenant: NewTenant): Promise<Tenant>;
  getTenant(id: string): Promise<Tenant | null>;
  getTenantBySeq(seq: number): Promise<Tenant | null>;
  listTenants(): Promise<Tenant[]>;
  updateTenant(seq: number, patch: TenantPatch): Promise<Tenant>;

  createApiKey(record: ApiKeyRecord): Promise<void>;
  findApiKey(key: string): Promise<ApiKeyRecord | null>;
  listApiKeys(tenantSeq: number): Promise<ApiKeyRecord[]>;
  /** Returns the revoked record, or null when no such key belongs to the tenant. */
  revokeApiKey(tenantSeq: number | null, id: string, revokedAt: number): Promise<ApiKeyRecord | null>;

  createAdminToken(record: AdminTokenRecord): Promise<void>;
  findAdminTokenByHash(tokenHash: string): Promise<AdminTokenRecord | null>;
  listAdminTokens(tenantSeq: number): Promise<AdminTokenRecord[]>;
  revokeAdminToken(tenantSeq: number | null, id: string, revokedAt: number): Promise<AdminTokenRecord | null>;

  /**
   * Campaign of each broadcast; broadcasts seen for the first time are registered under the
   * campaign given for them (auto-discovery). Returns broadcastId → campaignId.
   */
  resolveBroadcasts(
    tenantSeq: number,
    wanted: ReadonlyArray<{ broadcastId: string; campaignId: number }>,
    now: number,
  ): Promise<Map<string, number>>;
}

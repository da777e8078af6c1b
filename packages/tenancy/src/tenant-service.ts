import { randomBytes } from 'node:crypto';
import { fanOut, SvcError, systemClock, type Bus, type Clock } from '@svc/protocol';
import type { AdminTokenRecord, ApiKeyRecord, MetaStore, MetadataChange, MetadataChangeFeed, Tenant, TenantSettings } from '@svc/storage';
import {
  hashToken,
  isAdminToken,
  isApiKey,
  newAdminToken,
  newApiKey,
  newCommerceApiKey,
  newRecordId,
  sameHash,
  tokenDisplayPrefix,
  type RandomBytes,
} from './credentials';
import { DEFAULT_RETENTION_MONTHS, defaultSettings, mergeSettings, type SettingsPatch } from './tenant-settings';

/**
 * How long a credential lookup is served from memory before the store is asked again. With
 * several nodes sharing a change feed (`followChanges`), a key revoked on one node is refused on
 * the others as soon as its notice arrives (milliseconds); this is the bound when a notice is
 * lost, and the only bound for a node that follows no feed.
 */
export const CREDENTIAL_CACHE_TTL_MS = 30_000;
const CREDENTIAL_CACHE_MAX_ENTRIES = 10_000;
const TENANT_ID_PATTERN = /^[a-z0-9][a-z0-9-]{1,62}$/;

export interface NewTenantInput {
  id: string;
  name?: string;
  retentionMonths?: number;
  settings?: Partial<TenantSettings>;
  /** Use these credentials instead of fresh random ones (bootstrap). */
  apiKey?: string;
  adminToken?: string;
}

export interface CreatedTenant {
  tenant: Tenant;
  apiKey: ApiKeyRecord;
  /** Shown once: only its hash is stored. */
  adminToken: string;
}

export interface CreatedAdminToken {
  record: AdminTokenRecord;
  token: string;
}

interface CacheEntry {
  tenant: Tenant;
  expiresAt: number;
}

/**
 * Tenants and their credentials: creation, authentication (cached briefly, dropped at once on
 * any change made through this service, or on another node when it publishes the change on the
 * feed this service follows), revocation and settings.
 */
export class TenantService {
  private readonly cache = new Map<string, CacheEntry>();
  private changes: MetadataChangeFeed | null = null;
  /**
   * Counts cache drops: a lookup that began before a drop does not cache what it read, which
   * may be what the drop was about (a key revoked while it was being looked up).
   */
  private generation = 0;

  constructor(
    private readonly meta: MetaStore,
    private readonly clock: Clock = systemClock,
    private readonly random: RandomBytes = randomBytes,
    /** Where revoked API keys are announced (`apiKey.revoked`); none by default. */
    private readonly bus: Bus | null = null,
  ) {}

  async createTenant(input: NewTenantInput): Promise<CreatedTenant> {
    if (!TENANT_ID_PATTERN.test(input.id)) {
      throw new SvcError('invalid_value', 'A tenant id is 2-63 characters of a-z, 0-9 and "-", starting with a letter or digit.');
    }
    if (input.apiKey !== undefined && !isApiKey(input.apiKey)) {
      throw new SvcError('invalid_value', 'An API key is "svc_pk_" followed by 32 letters and digits.');
    }
    if (input.adminToken !== undefined && !isAdminToken(input.adminToken)) {
      throw new SvcError('invalid_value', 'An admin token is "svc_sk_" followed by 32 letters and digits.');
    }
    if (await this.meta.getTenant(input.id)) throw new SvcError('conflict', `Tenant "${input.id}" already exists.`);
    const now = this.clock.now();
    const tenant = await this.meta.createTenant({
      id: input.id,
      name: input.name ?? input.id,
      retentionMonths: input.retentionMonths ?? DEFAULT_RETENTION_MONTHS,
      settings: { ...defaultSettings(newCommerceApiKey(this.random)), ...input.settings },
      createdAt: now,
    });
    const apiKey = await this.createApiKey(tenant.seq, 'default', input.apiKey);
    const { token } = await this.createAdminToken(tenant.seq, 'default', input.adminToken);
    return { tenant, apiKey, adminToken: token };
  }

  /**
   * Creates tenant `demo` when there is no tenant at all; returns null otherwise. Nodes that
   * start together on one empty database all try: the tenant id is unique, so one creates it
   * and the others, finding it there after their attempt failed, return null.
   */
  async bootstrap(credentials: { apiKey?: string; adminToken?: string }): Promise<CreatedTenant | null> {
    if ((await this.meta.listTenants()).length) return null;
    try {
      return await this.createTenant({ id: 'demo', name: 'Demo', ...credentials });
    } catch (error) {
      if (await this.meta.getTenant('demo')) return null;
      throw error;
    }
  }

  listTenants(): Promise<Tenant[]> {
    return this.meta.listTenants();
  }

  async getTenant(id: string): Promise<Tenant> {
    const tenant = await this.meta.getTenant(id);
    if (!tenant) throw new SvcError('not_found', `No tenant "${id}".`);
    return tenant;
  }

  /** The tenant of a live API key, or null for an unknown or revoked one. */
  async authenticateApiKey(key: string): Promise<Tenant | null> {
    if (!isApiKey(key)) return null;
    return this.cached(`k:${key}`, async () => {
      const record = await this.meta.findApiKey(key);
      return record && record.revokedAt === null ? this.meta.getTenantBySeq(record.tenantSeq) : null;
    });
  }

  /** The tenant of a live admin token, or null. */
  async authenticateAdminToken(token: string): Promise<Tenant | null> {
    if (!isAdminToken(token)) return null;
    return this.authenticateTokenHash(hashToken(token));
  }

  /** The tenant of a live admin token known by its hash (dashboard sessions keep only that). */
  async authenticateTokenHash(hash: string): Promise<Tenant | null> {
    return this.cached(`t:${hash}`, async () => {
      const record = await this.meta.findAdminTokenByHash(hash);
      if (!record || record.revokedAt !== null || !sameHash(record.tokenHash, hash)) return null;
      return this.meta.getTenantBySeq(record.tenantSeq);
    });
  }

  async createApiKey(tenantSeq: number, name: string, key: string = newApiKey(this.random)): Promise<ApiKeyRecord> {
    const record: ApiKeyRecord = {
      id: newRecordId('ak', this.random),
      tenantSeq,
      key,
      name,
      createdAt: this.clock.now(),
      revokedAt: null,
    };
    if (await this.meta.findApiKey(key)) throw new SvcError('conflict', 'This API key is already in use.');
    await this.meta.createApiKey(record);
    return record;
  }

  listApiKeys(tenantSeq: number): Promise<ApiKeyRecord[]> {
    return this.meta.listApiKeys(tenantSeq);
  }

  /** Revokes a key of `tenantSeq` (any tenant's when null, for operators). */
  async revokeApiKey(tenantSeq: number | null, id: string): Promise<ApiKeyRecord> {
    const record = await this.meta.revokeApiKey(tenantSeq, id, this.clock.now());
    this.dropCache();
    if (!record) throw new SvcError('not_found', `No API key "${id}".`);
    await this.changes?.publish({ kind: 'api_key', tenantSeq: record.tenantSeq, id: record.id });
    this.announceRevoked(record);
    return record;
  }

  /** Publishes `apiKey.revoked` (e.g. the gateway closes the key's sockets). */
  private announceRevoked(record: ApiKeyRecord): void {
    if (this.bus) fanOut(this.bus, 'apiKey.revoked', { tenantSeq: record.tenantSeq, keyId: record.id, key: record.key });
  }

  async createAdminToken(
    tenantSeq: number,
    name: string,
    token: string = newAdminToken(this.random),
  ): Promise<CreatedAdminToken> {
    const record: AdminTokenRecord = {
      id: newRecordId('at', this.random),
      tenantSeq,
      tokenHash: hashToken(token),
      prefix: tokenDisplayPrefix(token),
      name,
      createdAt: this.clock.now(),
      revokedAt: null,
    };
    if (await this.meta.findAdminTokenByHash(record.tokenHash)) throw new SvcError('conflict', 'This admin token is already in use.');
    await this.meta.createAdminToken(record);
    return { record, token };
  }

  listAdminTokens(tenantSeq: number): Promise<AdminTokenRecord[]> {
    return this.meta.listAdminTokens(tenantSeq);
  }

  async revokeAdminToken(tenantSeq: number | null, id: string): Promise<AdminTokenRecord> {
    const record = await this.meta.revokeAdminToken(tenantSeq, id, this.clock.now());
    this.dropCache();
    if (!record) throw new SvcError('not_found', `No admin token "${id}".`);
    await this.changes?.publish({ kind: 'admin_token', tenantSeq: record.tenantSeq, id: record.id });
    return record;
  }

  /** Applies a validated settings patch (see SETTINGS_PATCH_SCHEMA). */
  async updateSettings(tenant: Tenant, patch: SettingsPatch): Promise<Tenant> {
    const updated = await this.meta.updateTenant(tenant.seq, {
      name: patch.name,
      retentionMonths: patch.retentionMonths,
      settings: mergeSettings(tenant.settings, patch),
    });
    this.dropCache();
    await this.changes?.publish({ kind: 'tenant', tenantSeq: updated.seq });
    return updated;
  }

  /**
   * Publishes this service's credential and settings changes on `feed`, and drops what the cache
   * holds of a tenant when another node publishes a change of it (everything when notices may
   * have been lost). An API key revoked elsewhere is announced on the bus too.
   * Call once, before serving.
   */
  followChanges(feed: MetadataChangeFeed): void {
    this.changes = feed;
    feed.subscribe({
      changed: (change, fromThisNode) => {
        if (fromThisNode) return;
        this.dropTenant(change.tenantSeq);
        if (change.kind === 'api_key' && change.id !== undefined) void this.revokedElsewhere(change).catch(() => undefined);
      },
      missedChanges: () => this.dropCache(),
    });
  }

  private dropCache(): void {
    this.generation++;
    this.cache.clear();
  }

  private dropTenant(tenantSeq: number): void {
    this.generation++;
    for (const [key, entry] of this.cache) if (entry.tenant.seq === tenantSeq) this.cache.delete(key);
  }

  /** Announces a key another node revoked (its notice names only the id). */
  private async revokedElsewhere(change: MetadataChange): Promise<void> {
    if (!this.bus) return;
    const record = (await this.meta.listApiKeys(change.tenantSeq)).find((key) => key.id === change.id);
    if (!record || record.revokedAt === null) return;
    this.announceRevoked(record);
  }

  private async cached(key: string, load: () => Promise<Tenant | null>): Promise<Tenant | null> {
    const now = this.clock.now();
    const hit = this.cache.get(key);
    if (hit && hit.expiresAt > now) return hit.tenant;
    const generation = this.generation;
    const tenant = await load();
    if (generation !== this.generation) return tenant;
    if (tenant) {
      if (this.cache.size >= CREDENTIAL_CACHE_MAX_ENTRIES) this.cache.clear();
      this.cache.set(key, { tenant, expiresAt: now + CREDENTIAL_CACHE_TTL_MS });
    } else {
      this.cache.delete(key);
    }
    return tenant;
  }
}

import {
  DuckDbContentStore, DuckDbDatabase, DuckDbDeletionStore, DuckDbMetaStore, DuckDbSessionStore, DuckDbWebhookStore,
  hashSessionSecret, hashUserId, PgContentStore, PgDatabase, PgDeletionJobStore, PgMetaStore, PgSessionStore, PgWebhookEndpointStore,
  type MetadataStores, type TenantSettings,
} from '../src';

const settings: TenantSettings = {
  theme: { primaryColor: '#123456' },
  featureFlags: { lineup: true, payments: false, polls: true, contests: true, sponsorMoments: false },
  localization: { defaultLanguage: 'de' },
  availableMarkets: ['DE', 'AT'],
  fallbackCountry: 'DE',
  defaultCurrency: 'EUR',
  allowedOrigins: ['https://shop.example'],
  commerceApiKey: 'ck_1',
  defaultCampaignId: 1,
};

/** Tenant seqs the DuckDB sequence hands out before the fixture's tenants: they start at 4, not 1. */
const SEQS_USED_BEFORE = 3;
const T0 = Date.UTC(2026, 10, 20, 8, 15, 30, 123);

/** The metadata stores of a DuckDB database. */
export function duckDbMetadata(db: DuckDbDatabase): MetadataStores {
  const webhooks = new DuckDbWebhookStore(db);
  return {
    meta: new DuckDbMetaStore(db),
    content: new DuckDbContentStore(db),
    webhookEndpoints: webhooks,
    deletions: new DuckDbDeletionStore(db),
    sessions: new DuckDbSessionStore(db),
  };
}

/** The metadata stores of a PostgreSQL database. */
export function pgMetadata(db: PgDatabase): MetadataStores {
  return {
    meta: new PgMetaStore(db),
    content: new PgContentStore(db),
    webhookEndpoints: new PgWebhookEndpointStore(db),
    deletions: new PgDeletionJobStore(db),
    sessions: new PgSessionStore(db),
  };
}

/**
 * Fills the DuckDB database in `dataDir` with two tenants (seqs 4 and 5) and records of every
 * metadata kind, with the fields a plain create leaves out set too (revocations, shown times,
 * rotated secrets, completed jobs).
 */
export async function fillMetadata(dataDir: string): Promise<void> {
  const db = await DuckDbDatabase.open(dataDir);
  try {
    for (let i = 0; i < SEQS_USED_BEFORE; i++) await db.query(`SELECT nextval('tenant_seq')`);
    const s = duckDbMetadata(db);
    const acme = await s.meta.createTenant({ id: 'acme', name: 'Acme “Live”', retentionMonths: 6, settings, createdAt: T0 });
    const beta = await s.meta.createTenant({ id: 'beta', name: 'Beta', retentionMonths: 12, settings: { ...settings, defaultCampaignId: 9 }, createdAt: T0 + 1 });
    for (const t of [acme, beta]) {
      await s.meta.createApiKey({ id: `ak_${t.id}_1`, tenantSeq: t.seq, key: `pk_${t.id}_1`, name: 'web', createdAt: T0 + 2, revokedAt: null });
      await s.meta.createApiKey({ id: `ak_${t.id}_2`, tenantSeq: t.seq, key: `pk_${t.id}_2`, name: 'old', createdAt: T0 + 3, revokedAt: null });
      await s.meta.revokeApiKey(t.seq, `ak_${t.id}_2`, T0 + 4);
      await s.meta.createAdminToken({ id: `at_${t.id}_1`, tenantSeq: t.seq, tokenHash: hashUserId(`token-${t.id}`), prefix: 'svc_at_', name: 'ops', createdAt: T0 + 5, revokedAt: null });
      await s.meta.createAdminToken({ id: `at_${t.id}_2`, tenantSeq: t.seq, tokenHash: hashUserId(`old-${t.id}`), prefix: 'svc_at_', name: 'gone', createdAt: T0 + 6, revokedAt: null });
      await s.meta.revokeAdminToken(t.seq, `at_${t.id}_2`, T0 + 7);
    }
    await s.content.createCampaign({ tenantSeq: acme.seq, id: 7, name: 'Autumn', createdAt: T0 + 8 });
    await s.content.createCampaign({ tenantSeq: acme.seq, id: Number.MAX_SAFE_INTEGER, name: 'Largest', createdAt: T0 + 9 });
    await s.content.createSponsor({ tenantSeq: acme.seq, id: 'sp_1', name: 'Brew', logoUrl: 'https://cdn.example/brew.png', createdAt: T0 + 10 });
    await s.content.createSponsor({ tenantSeq: beta.seq, id: 'sp_2', name: 'No logo', logoUrl: null, createdAt: T0 + 11 });
    await s.content.createBroadcast({ tenantSeq: acme.seq, id: 'show-1', campaignId: 7, title: 'Opening night', createdAt: T0 + 12 });
    // Discovered from events: registered with its campaign, no title.
    await s.meta.resolveBroadcasts(acme.seq, [{ broadcastId: 'found-live', campaignId: 42 }], T0 + 13);
    await s.content.createOverlay({
      tenantSeq: acme.seq, broadcastId: 'show-1', id: 'ov_poll', type: 'poll',
      content: { type: 'poll', question: 'Which one? “ü” \u{1F600}', options: ['x', 'y'], closesAt: '2026-11-21T10:00:00.000Z' },
      active: false, createdAt: T0 + 14, updatedAt: T0 + 14, shownAt: null,
    });
    await s.content.updateOverlay(acme.seq, 'ov_poll', { active: true, shownAt: T0 + 16 }, T0 + 15);
    await s.content.createOverlay({
      tenantSeq: acme.seq, broadcastId: 'found-live', id: 'ov_product', type: 'product',
      content: { url: 'https://shop.example/p', type: 'product', price: 12.5, name: 'Scarf', currency: 'EUR', placement: 'banner' },
      active: false, createdAt: T0 + 17, updatedAt: T0 + 17, shownAt: null,
    });
    await s.webhookEndpoints.createEndpoint({
      tenantSeq: acme.seq, id: 'wh_1', url: 'https://hooks.example/a', description: 'orders', eventTypes: ['order', 'poll_vote'],
      enabled: false, disabledReason: 'too many failures', secret: 'whsec_new', previousSecret: 'whsec_old',
      previousSecretExpiresAt: T0 + 20, failingSince: T0 + 19, createdAt: T0 + 18, updatedAt: T0 + 21,
    }, 20);
    await s.webhookEndpoints.createEndpoint({
      tenantSeq: beta.seq, id: 'wh_2', url: 'https://hooks.example/b', description: null, eventTypes: null,
      enabled: true, disabledReason: null, secret: 'whsec_b', previousSecret: null,
      previousSecretExpiresAt: null, failingSince: null, createdAt: T0 + 22, updatedAt: T0 + 22,
    }, 20);
    const job = (id: string, userId: string, requestedAt: number) => ({
      id, tenantSeq: acme.seq, userHash: hashUserId(userId), status: 'pending' as const, requestedAt,
      completedAt: null, purgedAt: null, deletedEvents: null, deletedRejects: null, error: null,
    });
    await s.deletions.create(job('del_done', 'u1', T0 + 23));
    await s.deletions.markCompleted('del_done', T0 + 24, { deletedEvents: 5, deletedRejects: 1 });
    await s.deletions.markPurged(['del_done'], T0 + 25);
    await s.deletions.create(job('del_failed', 'u2', T0 + 26));
    await s.deletions.markFailed('del_failed', 'disk full');
    await s.deletions.create(job('del_waiting', 'u3', T0 + 27));
    await s.sessions.createSession({ idHash: hashSessionSecret('s1'), tenantSeq: acme.seq, tokenHash: hashUserId('token-acme'), createdAt: T0 + 28, expiresAt: T0 + 29 });
    await s.sessions.createSession({ idHash: hashSessionSecret('s2'), tenantSeq: beta.seq, tokenHash: hashUserId('token-beta'), createdAt: T0 + 30, expiresAt: T0 + 31 });
  } finally {
    await db.close();
  }
}

/** Every metadata record, tenant by tenant and kind by kind, in the stores' list order. */
export async function metadataSnapshot(s: MetadataStores, tenantIds?: string[]): Promise<Record<string, unknown>> {
  const tenants = (await s.meta.listTenants()).filter((t) => !tenantIds || tenantIds.includes(t.id));
  const snapshot: Record<string, unknown> = { tenants };
  for (const t of tenants) {
    const broadcasts = await s.content.listBroadcasts(t.seq);
    snapshot[t.id] = {
      apiKeys: await s.meta.listApiKeys(t.seq),
      adminTokens: await s.meta.listAdminTokens(t.seq),
      campaigns: await s.content.listCampaigns(t.seq),
      sponsors: await s.content.listSponsors(t.seq),
      broadcasts,
      overlays: await Promise.all(broadcasts.map((b) => s.content.listOverlays(t.seq, b.id))),
      endpoints: await s.webhookEndpoints.listEndpoints(t.seq),
      deletionJobs: await s.deletions.listJobs(t.seq),
      sessions: await s.sessions.listSessions(t.seq),
    };
  }
  return snapshot;
}

import { describe, expect, it } from 'vitest';
import type { WebhookEndpointRecord, WebhookEndpointStore } from '../src';

export interface WebhookEndpointBackend {
  endpoints: WebhookEndpointStore;
  close(): Promise<void>;
}

/** An endpoint with every optional field set, so that a round trip checks them all. */
export const webhookEndpoint = (tenantSeq: number, id: string, overrides: Partial<WebhookEndpointRecord> = {}): WebhookEndpointRecord => ({
  tenantSeq,
  id,
  url: `https://receiver.example/${id}`,
  description: `endpoint ${id}`,
  eventTypes: ['poll.voted', 'checkout.completed'],
  enabled: true,
  disabledReason: null,
  secret: `whsec_${id}`,
  previousSecret: `whsec_old_${id}`,
  previousSecretExpiresAt: 1_767_225_600_123,
  failingSince: 1_767_139_200_456,
  createdAt: 1_767_000_000_789,
  updatedAt: 1_767_000_001_000,
  ...overrides,
});

/** Behaviour every WebhookEndpointStore backend must have. */
export function webhookEndpointStoreContract(name: string, open: () => Promise<WebhookEndpointBackend>): void {
  describe(`${name} webhook endpoint store contract`, () => {
    it('keeps every field of an endpoint, nulls and an empty filter included, and finds it only in its tenant', async () => {
      const { endpoints, close } = await open();
      const full = webhookEndpoint(1, 'wh_full');
      const bare = webhookEndpoint(1, 'wh_bare', {
        description: null, eventTypes: null, previousSecret: null, previousSecretExpiresAt: null, failingSince: null,
        enabled: false, disabledReason: 'Disabled by an administrator.',
      });
      const empty = webhookEndpoint(1, 'wh_empty', { eventTypes: [] });
      for (const e of [full, bare, empty]) expect(await endpoints.createEndpoint(e, 20)).toBe(true);
      expect(await endpoints.getEndpoint(1, 'wh_full')).toEqual(full);
      expect(await endpoints.getEndpoint(1, 'wh_bare')).toEqual(bare);
      expect(await endpoints.getEndpoint(1, 'wh_empty')).toEqual(empty);
      expect(await endpoints.getEndpoint(2, 'wh_full')).toBeNull();
      expect(await endpoints.getEndpoint(1, 'wh_none')).toBeNull();
      await close();
    });

    it('lists a tenant’s endpoints oldest first, ids in byte order on a tie, and every tenant’s enabled ones by tenant then id', async () => {
      const { endpoints, close } = await open();
      const rows = [
        webhookEndpoint(2, 'wh_b', { createdAt: 2000 }),
        webhookEndpoint(2, 'wh_a', { createdAt: 3000 }),
        webhookEndpoint(2, 'wh_Z', { createdAt: 2000 }),
        webhookEndpoint(2, 'wh_off', { createdAt: 1000, enabled: false }),
        webhookEndpoint(1, 'wh_c', { createdAt: 5000 }),
      ];
      for (const e of rows) await endpoints.createEndpoint(e, 20);
      expect((await endpoints.listEndpoints(2)).map((e) => e.id)).toEqual(['wh_off', 'wh_Z', 'wh_b', 'wh_a']);
      expect((await endpoints.listEndpoints(3))).toEqual([]);
      expect((await endpoints.listEnabledEndpoints()).map((e) => `${e.tenantSeq}:${e.id}`)).toEqual(['1:wh_c', '2:wh_Z', '2:wh_a', '2:wh_b']);
      expect((await endpoints.listEnabledEndpoints())[0]).toEqual(rows[4]);
      await close();
    });

    it('updates every field but the creation time, only within the endpoint’s tenant', async () => {
      const { endpoints, close } = await open();
      const original = webhookEndpoint(1, 'wh_x');
      await endpoints.createEndpoint(original, 20);
      await endpoints.createEndpoint(webhookEndpoint(2, 'wh_x'), 20);
      const changed: WebhookEndpointRecord = {
        ...original,
        url: 'https://elsewhere.example/in', description: null, eventTypes: null, enabled: false, disabledReason: 'The receiver answered 410 Gone.',
        secret: 'whsec_new', previousSecret: null, previousSecretExpiresAt: null, failingSince: null, createdAt: 42, updatedAt: 1_767_000_009_999,
      };
      await endpoints.updateEndpoint(changed);
      expect(await endpoints.getEndpoint(1, 'wh_x')).toEqual({ ...changed, createdAt: original.createdAt });
      expect(await endpoints.getEndpoint(2, 'wh_x')).toEqual(webhookEndpoint(2, 'wh_x'));
      expect(await endpoints.listEnabledEndpoints()).toEqual([webhookEndpoint(2, 'wh_x')]);
      // Setting the optional fields again.
      await endpoints.updateEndpoint(original);
      expect(await endpoints.getEndpoint(1, 'wh_x')).toEqual(original);
      await close();
    });

    it('deletes an endpoint only within its tenant and reports whether it existed', async () => {
      const { endpoints, close } = await open();
      await endpoints.createEndpoint(webhookEndpoint(1, 'wh_x'), 20);
      await endpoints.createEndpoint(webhookEndpoint(2, 'wh_x'), 20);
      expect(await endpoints.deleteEndpoint(3, 'wh_x')).toBe(false);
      expect(await endpoints.deleteEndpoint(1, 'wh_x')).toBe(true);
      expect(await endpoints.deleteEndpoint(1, 'wh_x')).toBe(false);
      expect(await endpoints.getEndpoint(1, 'wh_x')).toBeNull();
      expect(await endpoints.getEndpoint(2, 'wh_x')).toEqual(webhookEndpoint(2, 'wh_x'));
      await close();
    });

    it('refuses an endpoint beyond the tenant’s limit, counting each tenant apart, and a second endpoint with one id', async () => {
      const { endpoints, close } = await open();
      expect(await endpoints.createEndpoint(webhookEndpoint(1, 'wh_1'), 2)).toBe(true);
      expect(await endpoints.createEndpoint(webhookEndpoint(1, 'wh_2'), 2)).toBe(true);
      expect(await endpoints.createEndpoint(webhookEndpoint(1, 'wh_3'), 2)).toBe(false);
      expect(await endpoints.createEndpoint(webhookEndpoint(2, 'wh_1'), 2)).toBe(true);
      expect((await endpoints.listEndpoints(1)).map((e) => e.id)).toEqual(['wh_1', 'wh_2']);
      await endpoints.deleteEndpoint(1, 'wh_1');
      expect(await endpoints.createEndpoint(webhookEndpoint(1, 'wh_3'), 2)).toBe(true);
      await expect(endpoints.createEndpoint(webhookEndpoint(2, 'wh_1', { url: 'https://other.example/' }), 20)).rejects.toThrow();
      expect((await endpoints.getEndpoint(2, 'wh_1'))?.url).toBe(webhookEndpoint(2, 'wh_1').url);
      await close();
    });

    it('keeps the limit when many endpoints of one tenant are created at the same moment', async () => {
      const { endpoints, close } = await open();
      const created = await Promise.all(Array.from({ length: 8 }, (_, i) => endpoints.createEndpoint(webhookEndpoint(1, `wh_${i}`), 5)));
      expect(created.filter(Boolean)).toHaveLength(5);
      expect(await endpoints.listEndpoints(1)).toHaveLength(5);
      await close();
    });
  });
}

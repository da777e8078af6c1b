import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import type { AdmissionTicket } from '../src';
import { admitViewer, type ViewerAdmissionDeps } from '../src/viewer-admission';
import { API_KEY, TENANT } from './gateway-harness';

const SESSION_ID = 'svc_01JD4W3G6QZ5K7M8N9P0R1S2T3';

/** A ticket that records what it was charged and lets `share` connections of a tenant in. */
function ticket(share = true) {
  const charged: string[] = [];
  const value: AdmissionTicket = {
    address: '127.0.0.1',
    release: () => {},
    chargeBadKey: () => void charged.push('bad key'),
    joinTenant: () => share,
  };
  return { value, charged };
}

function deps(slots: number[]): ViewerAdmissionDeps {
  return {
    authenticate: async (apiKey) => (apiKey === API_KEY ? { ...TENANT, settings: { ...TENANT.settings, allowedOrigins: ['https://shop.example'] } } : null),
    maxConnectionsPerTenant: 2,
    takeSlot: (tenantSeq) => {
      if (slots.length >= 2) return false;
      slots.push(tenantSeq);
      return true;
    },
  };
}

const request = (origin?: string) => ({ headers: origin ? { origin } : {} }) as IncomingMessage;
const params = (values: Record<string, string>) => new URLSearchParams({ apiKey: API_KEY, sessionId: SESSION_ID, contentId: 'b', ...values });

describe('admitViewer', () => {
  it('admits a viewer with a good key, origin and ids, holding one of the tenant\'s slots', async () => {
    const slots: number[] = [];
    const admission = await admitViewer('svc.v1', request('https://shop.example'), params({ userId: 'fan-1' }), ticket().value, deps(slots));
    expect(admission).toEqual({ admitted: true, viewer: { tenant: expect.objectContaining({ seq: TENANT.seq }), apiKey: API_KEY, sessionId: SESSION_ID, contentId: 'b', userId: 'fan-1' } });
    expect(slots).toEqual([TENANT.seq]);
  });

  it('refuses a wrong key with 4401, charging the address for it, and takes no slot', async () => {
    const slots: number[] = [];
    const { value, charged } = ticket();
    expect(await admitViewer('svc.v1', request(), params({ apiKey: 'svc_pk_wrong' }), value, deps(slots))).toEqual({ admitted: false, code: 4401, reason: 'invalid_api_key' });
    expect(charged).toEqual(['bad key']);
    expect(slots).toEqual([]);
  });

  it('refuses, in order, a foreign origin, a bad session id, the address over its share, and a tenant without slots', async () => {
    const slots: number[] = [];
    const refusal = async (origin: string, values: Record<string, string>, share = true) => {
      const admission = await admitViewer('svc.v1', request(origin), params(values), ticket(share).value, deps(slots));
      return admission.admitted ? 'admitted' : `${admission.reason}${admission.refusal ? ` (${admission.refusal})` : ''}`;
    };
    expect(await refusal('https://evil.example', { sessionId: 'nope' })).toBe('origin_not_allowed');
    expect(await refusal('https://shop.example', { sessionId: 'nope' })).toBe('invalid_session_id');
    expect(await refusal('https://shop.example', {}, false)).toBe('too_many_connections_from_address (address_share)');
    expect(await refusal('https://shop.example', {})).toBe('admitted');
    expect(await refusal('https://shop.example', {})).toBe('admitted');
    expect(await refusal('https://shop.example', {})).toBe('too_many_connections (tenant_connections)');
  });
});

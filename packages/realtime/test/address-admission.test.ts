import { MAX_HEAVY_ADDRESSES, ManualClock } from '@svc/protocol';
import { describe, expect, it } from 'vitest';
import { AddressAdmission, addressHash, DEFAULT_ADDRESS_ADMISSION_OPTIONS, type AdmissionTicket } from '../src';

const MAX_PER_TENANT = 1_000;

function admission(): AddressAdmission {
  return new AddressAdmission({ ...DEFAULT_ADDRESS_ADMISSION_OPTIONS, maxConnectionsPerAddress: 100, upgradesPerAddressPerSecond: 0 }, new ManualClock(0));
}

/** Opens `count` sockets from an address, each joining the tenant. */
function open(admitted: AddressAdmission, address: string, count: number, tenantSeq = 1): AdmissionTicket[] {
  return Array.from({ length: count }, () => {
    const decision = admitted.admit(address);
    if (!decision.admitted) throw new Error(decision.detail);
    expect(decision.ticket.joinTenant(tenantSeq, MAX_PER_TENANT)).toBe(true);
    return decision.ticket;
  });
}

describe('heavy addresses, as the other nodes count them', () => {
  it('lists, hashed, only the addresses holding a tenth of a cap or more', () => {
    const admitted = admission();
    const heavy = open(admitted, '203.0.113.7', 12);
    open(admitted, '198.51.100.1', 9);
    open(admitted, '2001:db8:1:2::1', 10, 2);
    const listed = admitted.heavyAddresses(MAX_PER_TENANT);
    // A tenth of 100 over all tenants; a tenth of the tenants' share (10% of 1,000) within one.
    expect(listed).toEqual({
      addresses: [
        { address: addressHash('203.0.113.7'), connections: 12 },
        { address: addressHash('2001:db8:1:2::/64'), connections: 10 },
      ],
      tenantAddresses: [
        { tenantSeq: 1, address: addressHash('203.0.113.7'), connections: 12 },
        { tenantSeq: 2, address: addressHash('2001:db8:1:2::/64'), connections: 10 },
      ],
    });
    expect(JSON.stringify(listed)).not.toMatch(/203\.0\.113|2001:db8/);
    for (const ticket of heavy.slice(0, 3)) ticket.release();
    expect(admitted.heavyAddresses(MAX_PER_TENANT).addresses).toEqual([{ address: addressHash('2001:db8:1:2::/64'), connections: 10 }]);
  });

  it('lists at most MAX_HEAVY_ADDRESSES of each kind, the heaviest, whatever the number of sockets', () => {
    const admitted = admission();
    for (let i = 0; i < MAX_HEAVY_ADDRESSES + 20; i++) open(admitted, `10.0.${Math.floor(i / 250)}.${i % 250}`, i === 0 ? 50 : 10);
    const listed = admitted.heavyAddresses(MAX_PER_TENANT);
    expect(listed.addresses).toHaveLength(MAX_HEAVY_ADDRESSES);
    expect(listed.tenantAddresses).toHaveLength(MAX_HEAVY_ADDRESSES);
    expect(listed.addresses[0]).toEqual({ address: addressHash('10.0.0.0'), connections: 50 });
  });
});

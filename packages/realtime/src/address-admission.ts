import { createHash } from 'node:crypto';
import ipaddr from 'ipaddr.js';
import { MAX_HEAVY_ADDRESSES, TokenBucketLimiter, type Clock, type NodeSockets } from '@svc/protocol';

export interface AddressAdmissionOptions {
  /**
   * Open sockets one client address may hold at once, over all tenants (default 1,000: many
   * real viewers share one IPv4 address behind a carrier-grade NAT). Across nodes (the gateway's
   * `viewerCountsAcrossNodes`), the other nodes' sockets of the address count too, within the
   * tolerance of `AddressesElsewhere`: a node reports an address only while it holds at least
   * `HEAVY_ADDRESS_PERCENT` of the cap there and is among that node's `MAX_HEAVY_ADDRESSES` (100)
   * heaviest; an address below the 100 heaviest on a node is never reported by it.
   */
  maxConnectionsPerAddress: number;
  /**
   * The largest share, in percent, of a tenant's connection limit that one address may hold
   * (default 10), so that one address can never take all of a tenant's connections. Across
   * nodes, as `maxConnectionsPerAddress`.
   */
  addressSharePercent: number;
  /** Sustained WebSocket upgrades per second per address (default 100); 0 turns the limit off. */
  upgradesPerAddressPerSecond: number;
  /** Upgrades one address may make at once before the sustained rate applies (default 1,000). */
  upgradeBurst: number;
  /** Upgrades an upgrade with a missing or wrong API key counts as (default 10). */
  badKeyUpgradeCost: number;
}

export const DEFAULT_ADDRESS_ADMISSION_OPTIONS: AddressAdmissionOptions = {
  maxConnectionsPerAddress: 1_000,
  addressSharePercent: 10,
  upgradesPerAddressPerSecond: 100,
  upgradeBurst: 1_000,
  badKeyUpgradeCost: 10,
};

/** Retry-After of an upgrade refused because its address holds all the sockets it may. */
export const ADDRESS_FULL_RETRY_AFTER_S = 10;

/**
 * The part of an address cap, in percent, above which a node lists the address in its counts
 * (`NodeSockets`): below it, an address's sockets on a node go unseen by the other nodes.
 */
export const HEAVY_ADDRESS_PERCENT = 10;

/**
 * The other nodes' open sockets of client addresses, by `addressHash`, as their latest counts
 * say (`ClusterViewerCounts`). Tolerance: those counts are up to one count interval old, and
 * list an address only where it holds at least `HEAVY_ADDRESS_PERCENT` of a cap (at most
 * `MAX_HEAVY_ADDRESSES`, the heaviest). So with N nodes an address may hold, over the cluster,
 * up to its cap, plus the sockets it was admitted on the other nodes within one interval, plus
 * just under `HEAVY_ADDRESS_PERCENT` of the cap on each of the N - 1 other nodes; and on a node
 * with more than `MAX_HEAVY_ADDRESSES` heavy addresses, the sockets there of the addresses
 * below its 100 heaviest are not counted by the other nodes at all.
 */
export interface AddressesElsewhere {
  /** Open sockets of an address on the other nodes, over all tenants. */
  address(addressHash: string): number;
  /** Open sockets of an address among one tenant's on the other nodes. */
  tenantAddress(tenantSeq: number, addressHash: string): number;
}

/** Why an address was refused a connection, as counted in the refusal metric. */
export type AdmissionRefusal = 'upgrade_rate' | 'address_connections' | 'address_share';

export type UpgradeDecision =
  | { admitted: true; ticket: AdmissionTicket }
  | { admitted: false; reason: Exclude<AdmissionRefusal, 'address_share'>; retryAfterSeconds: number; detail: string };

/** One admitted socket: what it counts against, until `release`. */
export interface AdmissionTicket {
  readonly address: string;
  /** The upgrade carried no valid API key: the address pays the rest of its higher cost. */
  chargeBadKey(): void;
  /** Takes a place among the tenant's connections from this address; false when the address holds its share. */
  joinTenant(tenantSeq: number, maxConnectionsPerTenant: number): boolean;
  /** The socket closed: frees its places. Safe to call more than once. */
  release(): void;
}

/**
 * Admission of WebSocket connections per client address: a token bucket for upgrades (bad keys
 * cost more), a cap on the sockets one address holds, and a cap on its share of each tenant's
 * connections. IPv6 addresses count per /64, the block one subscriber usually gets.
 */
export class AddressAdmission {
  private readonly upgrades: TokenBucketLimiter | null;
  private readonly open = new Map<string, number>();
  private readonly openPerTenant = new Map<string, number>();

  constructor(
    private readonly options: AddressAdmissionOptions,
    clock: Clock,
    /** The other nodes' sockets of addresses, when caps count across nodes; none by default. */
    private readonly elsewhere: AddressesElsewhere | null = null,
  ) {
    this.upgrades = options.upgradesPerAddressPerSecond > 0
      ? new TokenBucketLimiter(options.upgradesPerAddressPerSecond, options.upgradeBurst / options.upgradesPerAddressPerSecond, clock)
      : null;
  }

  /** Decides an upgrade request before its handshake. */
  admit(clientAddress: string): UpgradeDecision {
    const address = addressKey(clientAddress);
    const hash = this.elsewhere ? addressHash(address) : '';
    const elsewhere = this.elsewhere?.address(hash) ?? 0;
    if ((this.open.get(address) ?? 0) + elsewhere >= this.options.maxConnectionsPerAddress) {
      return {
        admitted: false,
        reason: 'address_connections',
        retryAfterSeconds: ADDRESS_FULL_RETRY_AFTER_S,
        detail: `At most ${this.options.maxConnectionsPerAddress} open connections per client address.`,
      };
    }
    const decision = this.upgrades?.take(address);
    if (decision && !decision.allowed) {
      return {
        admitted: false,
        reason: 'upgrade_rate',
        retryAfterSeconds: decision.retryAfterSeconds,
        detail: `Too many connection attempts from this address; retry in ${decision.retryAfterSeconds} s.`,
      };
    }
    return { admitted: true, ticket: this.ticket(address, hash) };
  }

  /** Open sockets counted against an address now (for tests and metrics). */
  openConnections(clientAddress: string): number {
    return this.open.get(addressKey(clientAddress)) ?? 0;
  }

  /**
   * The addresses holding at least `HEAVY_ADDRESS_PERCENT` of a cap here, hashed, at most
   * `MAX_HEAVY_ADDRESSES` of each kind (the heaviest): what the other nodes' caps count.
   */
  heavyAddresses(maxConnectionsPerTenant: number): Pick<NodeSockets, 'addresses' | 'tenantAddresses'> {
    const addressFloor = heavyFloor(this.options.maxConnectionsPerAddress);
    const tenantFloor = heavyFloor(this.tenantLimit(maxConnectionsPerTenant));
    return {
      addresses: heaviest(this.open, addressFloor).map(([address, connections]) => ({ address: addressHash(address), connections })),
      tenantAddresses: heaviest(this.openPerTenant, tenantFloor).map(([key, connections]) => {
        const split = key.indexOf(' ');
        return { tenantSeq: Number(key.slice(0, split)), address: addressHash(key.slice(split + 1)), connections };
      }),
    };
  }

  /** Sockets one address may hold among a tenant's. */
  private tenantLimit(maxConnectionsPerTenant: number): number {
    const share = Math.floor((maxConnectionsPerTenant * this.options.addressSharePercent) / 100);
    return Math.min(this.options.maxConnectionsPerAddress, Math.max(1, share));
  }

  private ticket(address: string, hash: string): AdmissionTicket {
    adjust(this.open, address, 1);
    let tenantKey: string | null = null;
    let released = false;
    return {
      address,
      chargeBadKey: () => this.upgrades?.charge(address, this.options.badKeyUpgradeCost - 1),
      joinTenant: (tenantSeq, maxConnectionsPerTenant) => {
        if (tenantKey !== null) return true;
        const key = `${tenantSeq} ${address}`;
        const elsewhere = this.elsewhere?.tenantAddress(tenantSeq, hash) ?? 0;
        if ((this.openPerTenant.get(key) ?? 0) + elsewhere >= this.tenantLimit(maxConnectionsPerTenant)) return false;
        adjust(this.openPerTenant, key, 1);
        tenantKey = key;
        return true;
      },
      release: () => {
        if (released) return;
        released = true;
        adjust(this.open, address, -1);
        if (tenantKey !== null) adjust(this.openPerTenant, tenantKey, -1);
      },
    };
  }
}

/** Sockets from which an address counts as heavy under a cap. */
function heavyFloor(limit: number): number {
  return Math.max(1, Math.ceil((limit * HEAVY_ADDRESS_PERCENT) / 100));
}

/** The entries of at least `floor`, at most `MAX_HEAVY_ADDRESSES`, the largest first. */
function heaviest(counts: Map<string, number>, floor: number): Array<[string, number]> {
  const heavy: Array<[string, number]> = [];
  for (const entry of counts) if (entry[1] >= floor) heavy.push(entry);
  return heavy.sort((a, b) => b[1] - a[1]).slice(0, MAX_HEAVY_ADDRESSES);
}

/**
 * How an address key travels between nodes: a SHA-256 hash, of which the first 22 base64url
 * characters are kept (132 bits: short, and far from colliding), so that no address goes over the
 * bus in clear. A pseudonym, not anonymity: anyone who reads the bus could hash every IPv4
 * address and match (the bus is the nodes' own NATS; see docs/security.md).
 */
export function addressHash(key: string): string {
  return createHash('sha256').update(`svc.address\n${key}`).digest('base64url').slice(0, 22);
}

function adjust(counts: Map<string, number>, key: string, by: number): void {
  const value = (counts.get(key) ?? 0) + by;
  if (value > 0) counts.set(key, value);
  else counts.delete(key);
}

/**
 * The key a client address counts under: an IPv4 address as it is (also when written as
 * IPv4-mapped IPv6, dotted or in hex), an IPv6 address by its /64 network, since one subscriber
 * usually holds a whole /64 and could otherwise take a fresh address for every connection.
 */
export function addressKey(address: string): string {
  const plain = address.replace(/%.*$/, '');
  if (!ipaddr.isValid(plain)) return plain;
  const parsed = ipaddr.process(plain);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const groups = (parsed as ipaddr.IPv6).parts.slice(0, 4).map((part) => part.toString(16));
  return `${groups.join(':')}::/64`;
}

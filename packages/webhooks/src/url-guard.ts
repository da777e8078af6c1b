import type { LookupAddress } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';
import { SvcError } from '@svc/protocol';

/**
 * IPv6 ranges that carry an IPv4 address in their last 32 bits (IPv4-mapped `::ffff:a.b.c.d` and
 * IPv4-translated `::ffff:0:a.b.c.d`): the embedded address decides.
 */
const EMBEDS_IPV4 = new Set(['ipv4Mapped', 'rfc6145']);

/**
 * Whether a webhook may not connect to `address`: anything but ordinary public unicast — every
 * special-purpose range of the IANA registries (loopback, private, link-local and cloud metadata,
 * carrier-grade NAT, documentation, benchmarking, multicast, reserved, NAT64, 6to4, Teredo …),
 * IPv4-compatible `::a.b.c.d`, and anything that is not an address at all.
 */
export function isPrivateAddress(address: string): boolean {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address.replace(/^\[|\]$/g, ''));
  } catch {
    return true;
  }
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6;
    if (EMBEDS_IPV4.has(v6.range())) {
      const parts = v6.parts;
      parsed = new ipaddr.IPv4([parts[6]! >> 8, parts[6]! & 0xff, parts[7]! >> 8, parts[7]! & 0xff]);
    } else if (v6.parts.slice(0, 6).every((part) => part === 0)) {
      return true; // unspecified, loopback and the deprecated IPv4-compatible ::/96
    }
  }
  return parsed.range() !== 'unicast';
}

/** Every address of a host name; the system resolver (`dns.lookup`) unless one is injected. */
export type ResolveHost = (hostname: string) => Promise<LookupAddress[]>;

export const systemResolveHost: ResolveHost = (hostname) => dnsLookup(hostname, { all: true });

/** Checks the form of a webhook URL: http(s), a host, no credentials. */
export function parseWebhookUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalidUrl('is not a URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw invalidUrl('must use http or https');
  if (url.username || url.password) throw invalidUrl('must not carry credentials');
  if (!url.hostname) throw invalidUrl('must have a host');
  return url;
}

/** Refuses a URL whose host resolves to a private or loopback address (unless allowed). */
export async function assertPublicTarget(url: URL, allowPrivate: boolean, resolveHost: ResolveHost = systemResolveHost): Promise<void> {
  if (allowPrivate) return;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const addresses = ipaddr.isValid(host) ? [host] : await resolveAll(host, resolveHost);
  if (addresses.some(isPrivateAddress)) {
    throw invalidUrl(`resolves to a private or loopback address (${addresses.join(', ')}); set SVC_WEBHOOK_ALLOW_PRIVATE for local receivers`);
  }
}

/**
 * A `lookup` for outgoing connections that refuses private addresses at connect time, so a
 * DNS answer that changes after the URL was checked cannot reach inside the network.
 */
export function guardedLookup(allowPrivate: boolean, resolveHost: ResolveHost = systemResolveHost) {
  return (
    hostname: string,
    options: { all?: boolean; family?: number | string },
    callback: (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
  ): void => {
    const fail = (error: NodeJS.ErrnoException) => callback(error, options.all ? [] : '', 0);
    resolveHost(hostname).then((resolved) => {
      // Every answer is checked, whichever family the connection asked for.
      if (!allowPrivate && resolved.some((a) => isPrivateAddress(a.address))) {
        return fail(Object.assign(new Error(`${hostname} resolves to a private address`), { code: 'EPRIVATE' }));
      }
      const family = options.family === 4 || options.family === 'IPv4' ? 4 : options.family === 6 || options.family === 'IPv6' ? 6 : 0;
      const addresses = family ? resolved.filter((a) => a.family === family) : resolved;
      const first = addresses[0];
      if (!first) return fail(Object.assign(new Error(`${hostname} has no IPv${family} address`), { code: 'ENOTFOUND' }));
      if (options.all) return callback(null, addresses);
      callback(null, first.address, first.family);
    }, fail);
  };
}

async function resolveAll(host: string, resolveHost: ResolveHost): Promise<string[]> {
  try {
    return (await resolveHost(host)).map((a) => a.address);
  } catch {
    throw invalidUrl(`host ${host} cannot be resolved`);
  }
}

function invalidUrl(message: string): SvcError {
  return new SvcError('validation_failed', `The webhook URL ${message}.`, { errors: [{ path: '/url', code: 'invalid_value', message }] });
}

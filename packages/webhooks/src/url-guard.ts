import type { LookupAddress } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { SvcError } from '@svc/protocol';

/** Loopback, private, link-local (cloud metadata), carrier-grade NAT, multicast and reserved ranges. */
const BLOCKED = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  BLOCKED.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 96],
  ['::1', 128],
  ['64:ff9b::', 96],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  BLOCKED.addSubnet(network, prefix, 'ipv6');
}

/** Every address of a host name; the system resolver (`dns.lookup`) unless one is injected. */
export type ResolveHost = (hostname: string) => Promise<LookupAddress[]>;

export const systemResolveHost: ResolveHost = (hostname) => dnsLookup(hostname, { all: true });

export function isPrivateAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return BLOCKED.check(mapped[1]!, 'ipv4');
  const family = isIP(address);
  if (family === 0) return true;
  return BLOCKED.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

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
  const addresses = isIP(host) ? [host] : await resolveAll(host, resolveHost);
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

import type { LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import { assertPublicTarget, guardedLookup, isPrivateAddress, type ResolveHost } from '../src';

const answers =
  (...addresses: string[]): ResolveHost =>
  async () =>
    addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

/** Runs a guarded lookup the way net.connect does, as a promise. */
function lookup(resolveHost: ResolveHost, options: { all?: boolean; family?: number }, allowPrivate = false) {
  return new Promise<{ error: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number }>((resolve) =>
    guardedLookup(allowPrivate, resolveHost)('hooks.example.com', options, (error, address, family) => resolve({ error, address, family })),
  );
}

describe('webhook target guard', () => {
  it.each([
    ['172.16.0.1', 'private 172.16/12, first'],
    ['172.31.255.255', 'private 172.16/12, last'],
    ['192.168.0.1', 'private 192.168/16'],
    ['192.168.255.255', 'private 192.168/16, last'],
    ['100.64.0.1', 'carrier-grade NAT 100.64/10'],
    ['100.127.255.254', 'carrier-grade NAT 100.64/10, last'],
    ['169.254.169.254', 'cloud metadata (link-local)'],
    ['127.0.0.1', 'loopback'],
    ['10.20.30.40', 'private 10/8'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
    ['::ffff:7f00:1', 'IPv4-mapped loopback, hex form'],
    ['::ffff:169.254.169.254', 'IPv4-mapped metadata'],
    ['::1', 'IPv6 loopback'],
    ['fe80::1', 'link-local fe80::/10'],
    ['febf:ffff::1', 'link-local fe80::/10, last'],
    ['fd00::1', 'unique local fd00::/8'],
    ['fdff:ffff:ffff::1', 'unique local fd00::/8, last'],
    ['not-an-address', 'anything that is not an address'],
  ])('refuses %s (%s)', (address) => {
    expect(isPrivateAddress(address)).toBe(true);
  });

  it.each([
    ['172.15.255.255', 'just below 172.16/12'],
    ['172.32.0.0', 'just above 172.16/12'],
    ['192.169.0.1', 'just above 192.168/16'],
    ['100.63.255.255', 'just below 100.64/10'],
    ['100.128.0.0', 'just above 100.64/10'],
    ['169.255.0.1', 'just above 169.254/16'],
    ['93.184.215.14', 'a public IPv4 address'],
    ['::ffff:93.184.215.14', 'an IPv4-mapped public address'],
    ['fe7f:ffff::1', 'just below fe80::/10'],
    ['2606:4700:4700::1111', 'a public IPv6 address'],
  ])('accepts %s (%s)', (address) => {
    expect(isPrivateAddress(address)).toBe(false);
  });

  it('refuses a saved URL when any of its host addresses is private, or the host does not resolve', async () => {
    const url = new URL('https://hooks.example.com/in');
    await expect(assertPublicTarget(url, false, answers('93.184.215.14'))).resolves.toBeUndefined();
    await expect(assertPublicTarget(url, false, answers('93.184.215.14', '10.0.0.5'))).rejects.toMatchObject({ code: 'validation_failed' });
    const unresolvable: ResolveHost = () => Promise.reject(Object.assign(new Error('nope'), { code: 'ENOTFOUND' }));
    await expect(assertPublicTarget(url, false, unresolvable)).rejects.toThrow(/cannot be resolved/);
    await expect(assertPublicTarget(url, true, answers('10.0.0.5'))).resolves.toBeUndefined();
  });

  it('refuses a connection whose host now resolves to a private address, and passes public ones through', async () => {
    expect((await lookup(answers('127.0.0.1'), { all: true })).error).toMatchObject({ code: 'EPRIVATE' });
    expect((await lookup(answers('93.184.215.14', 'fd00::1'), { all: false })).error).toMatchObject({ code: 'EPRIVATE' });
    // Even an address of the family the connection did not ask for.
    expect((await lookup(answers('93.184.215.14', 'fe80::1'), { family: 4 })).error).toMatchObject({ code: 'EPRIVATE' });

    expect(await lookup(answers('93.184.215.14', '2606:4700:4700::1111'), { all: true })).toEqual({
      error: null,
      address: [
        { address: '93.184.215.14', family: 4 },
        { address: '2606:4700:4700::1111', family: 6 },
      ],
      family: undefined,
    });
    expect(await lookup(answers('2606:4700:4700::1111', '93.184.215.14'), { family: 4 })).toEqual({ error: null, address: '93.184.215.14', family: 4 });
    expect((await lookup(answers('127.0.0.1'), { all: false }, true)).address).toBe('127.0.0.1');
  });
});

import type { LookupAddress } from 'node:dns';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { assertPublicTarget, guardedLookup, HttpWebhookSender, isPrivateAddress, type ResolveHost } from '../src';

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
    ['::ffff:0:7f00:1', 'IPv4-translated loopback'],
    ['::ffff:0:a9fe:a9fe', 'IPv4-translated metadata'],
    ['::ffff:0:10.0.0.1', 'IPv4-translated private, dotted'],
    ['::7f00:1', 'IPv4-compatible loopback (deprecated ::/96)'],
    ['::', 'unspecified'],
    ['64:ff9b::a9fe:a9fe', 'NAT64 of the metadata address'],
    ['64:ff9b:1::1', 'local-use NAT64'],
    ['2002:7f00:1::1', '6to4 of loopback'],
    ['2001::1', 'Teredo'],
    ['2001:db8::1', 'documentation'],
    ['100::1', 'discard-only'],
    ['fec0::1', 'deprecated site-local'],
    ['ff02::1', 'multicast'],
    ['192.0.2.10', 'documentation TEST-NET-1'],
    ['198.51.100.10', 'documentation TEST-NET-2'],
    ['203.0.113.10', 'documentation TEST-NET-3'],
    ['198.18.0.1', 'benchmarking'],
    ['192.88.99.1', '6to4 relay anycast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['0.1.2.3', '"this network"'],
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
    ['::ffff:0:5db8:d70e', 'an IPv4-translated public address'],
    ['[2606:4700:4700::1111]', 'a bracketed public IPv6 address'],
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

  it('refuses a saved URL whose host is an IPv4-translated private literal', async () => {
    for (const url of ['http://[::ffff:0:7f00:1]:8080/in', 'http://[::ffff:0:a9fe:a9fe]/latest/meta-data', 'http://[64:ff9b::7f00:1]/']) {
      await expect(assertPublicTarget(new URL(url), false, answers('93.184.215.14'))).rejects.toMatchObject({ code: 'validation_failed' });
    }
  });

  it('never connects to an IP literal inside the network, though no name lookup happens for it', async () => {
    let received = 0;
    const server = createServer((_req, res) => {
      received++;
      res.writeHead(200).end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    // An endpoint saved while private targets were allowed, delivered by a process that forbids them.
    const guarded = new HttpWebhookSender(false, 2_000, answers('93.184.215.14'));
    const allowed = new HttpWebhookSender(true, 2_000);
    try {
      const blocked = await guarded.send(url, { 'content-type': 'application/json' }, '{}');
      expect(blocked).toMatchObject({ statusCode: null, error: 'blocked: private address' });
      expect(received).toBe(0);
      expect(await allowed.send(url, { 'content-type': 'application/json' }, '{}')).toMatchObject({ statusCode: 200, error: null });
      expect(received).toBe(1);
    } finally {
      await Promise.all([guarded.close(), allowed.close()]);
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

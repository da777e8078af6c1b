import { SvcError } from '@svc/protocol';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../../apps/server/test/child-server';
import type { Server, ServerInfo } from '@nats-io/transport-node';
import { connectNats, natsServers, serverToDial } from '../src';

describe('connecting to NATS', () => {
  it('reads a comma list of servers, ignoring blanks and empty entries', () => {
    expect(natsServers(' nats://a:4222, nats://b:4222 ,,nats://c:4222 ')).toEqual(['nats://a:4222', 'nats://b:4222', 'nats://c:4222']);
    expect(natsServers('nats://a:4222')).toEqual(['nats://a:4222']);
  });

  it('refuses an empty server list', async () => {
    await expect(connectNats(' , ')).rejects.toThrow(/empty/);
  });

  it('answers storage_unavailable with Retry-After when no server of the list answers', async () => {
    const urls = `nats://127.0.0.1:${await freePort()},nats://127.0.0.1:${await freePort()}`;
    const failed = await connectNats(urls, { connectTimeoutMs: 1_000 }).then(() => null, (error: unknown) => error);
    expect(failed).toBeInstanceOf(SvcError);
    expect((failed as SvcError).code).toBe('storage_unavailable');
    expect((failed as SvcError).headers?.['retry-after']).toMatch(/^\d+$/);
    expect((failed as SvcError).message).toContain(urls.split(',')[1]!.replace('nats://', ''));
  });

  it('never repeats a password of the server list in its message', async () => {
    const port = await freePort();
    const failed = await connectNats(`nats://svc:hunter2@127.0.0.1:${port}`, { connectTimeoutMs: 1_000 }).then(() => null, (error: unknown) => error);
    expect((failed as SvcError).code).toBe('storage_unavailable');
    expect((failed as SvcError).message).toContain(`127.0.0.1:${port}`);
    expect((failed as SvcError).message).not.toContain('hunter2');
  });

  it('dials on reconnect the server dialled least recently, not the one just lost while others are left', () => {
    const server = (port: number, lastConnect: number) => ({ hostname: '127.0.0.1', port, listen: `127.0.0.1:${port}`, src: '', tlsName: '', reconnects: 0, lastConnect, gossiped: false, didConnect: lastConnect > 0 }) as Server;
    const info = { server_id: 'lost' } as ServerInfo;
    // The client's own choice would be the first: the server it was connected to.
    const lost = server(4222, 1_000);
    expect(serverToDial([lost, server(4223, 0), server(4224, 0)], info)?.port).toBe(4223);
    // Connected last, so dialled last: each round tries the others first, oldest dial first.
    expect(serverToDial([server(4222, 5_000), server(4223, 3_000), server(4224, 2_000)], info)?.port).toBe(4224);
    expect(serverToDial([server(4222, 5_000)], info)?.port).toBe(4222);
    // The first connection keeps the client's choice.
    expect(serverToDial([lost, server(4223, 0)], null)).toBeNull();
  });
});

import { SvcError } from '@svc/protocol';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../../apps/server/test/child-server';
import { connectNats, natsServers } from '../src';

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
});

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@svc/protocol';
import { createHash } from 'node:crypto';
import { validEvent } from './events-fixture';
import { startTestApp, type TestApp } from './test-app';

const NOW = Date.UTC(2026, 10, 21, 12);

describe('DELETE /v1/users/:userId/events', () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await startTestApp({ clock: new ManualClock(NOW) });
  });
  afterEach(() => t.close());

  const as = (token: string) => ({ authorization: `Bearer ${token}` });
  const at = new Date(NOW - 60_000);

  async function seed() {
    // Votes count on a poll the service knows.
    await t.app.inject({ method: 'POST', url: '/v1/broadcasts', headers: as(t.demo.adminToken), payload: { id: 'broadcast-1', campaignId: 1 } });
    const poll = await t.app.inject({ method: 'POST', url: '/v1/broadcasts/broadcast-1/overlays', headers: as(t.demo.adminToken), payload: { type: 'poll', question: 'Who wins tonight?', options: ['Team A', 'Team B'] } });
    const data = { pollId: poll.json().id, questionText: 'Who wins tonight?', optionSelected: 'Team A', optionIndex: 0 };
    const events = [
      validEvent('poll.voted', at, { userId: 'target-user', data }),
      validEvent('checkout.completed', at, { userId: 'target-user' }),
      validEvent('poll.voted', at, { userId: 'bystander', sessionId: 'svc_bystander', data }),
      validEvent('broadcast.joined', at, { userId: null }),
    ];
    await t.app.inject({ method: 'POST', url: '/v1/events', headers: { 'x-svc-api-key': t.demo.apiKey }, payload: { events } });
    // A reject of the same user lands in quarantine.
    await t.app.inject({ method: 'POST', url: '/v1/events', headers: { 'x-svc-api-key': t.demo.apiKey }, payload: { event: 'poll.unknown', userId: 'target-user' } });
    // The other tenant has a user of the same id.
    await t.app.inject({ method: 'POST', url: '/v1/events', headers: { 'x-svc-api-key': t.other.apiKey }, payload: validEvent('poll.voted', at, { userId: 'target-user' }) });
  }

  const exportUsers = async (token: string) =>
    (await t.app.inject({ url: '/v1/analytics/events?format=ndjson', headers: as(token) })).body
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line).userId);

  it("removes the user's events and rejects, keeps everyone else's, and reports the job", async () => {
    await seed();
    const response = await t.app.inject({ method: 'DELETE', url: '/v1/users/target-user/events', headers: as(t.demo.adminToken) });
    expect(response.statusCode).toBe(202);
    const job = response.json();
    expect(job).toMatchObject({ status: 'pending', requestedAt: new Date(NOW).toISOString() });
    expect(response.headers.location).toBe(`/v1/deletions/${job.id}`);

    await t.services.deletions.idle();
    const status = (await t.app.inject({ url: `/v1/deletions/${job.id}`, headers: as(t.demo.adminToken) })).json();
    expect(status).toMatchObject({ id: job.id, status: 'completed', deletedEvents: 2, deletedRejectedEvents: 1, completedAt: new Date(NOW).toISOString() });

    expect((await exportUsers(t.demo.adminToken)).sort()).toEqual(['bystander', null].sort());
    // Metrics are computed from the events: the user is gone from them too.
    const overview = (await t.app.inject({ url: '/v1/analytics/overview', headers: as(t.demo.adminToken) })).json();
    expect(overview.revenue).toEqual([]);
    expect(overview.polls[0].totalVotes).toBe(1);
    const rejects = (await t.app.inject({ url: '/v1/rejected-events', headers: as(t.demo.adminToken) })).json().data;
    expect(JSON.stringify(rejects)).not.toContain('target-user');
    // The other tenant's user of the same id is untouched.
    expect(await exportUsers(t.other.adminToken)).toEqual(['target-user']);
  });

  it('is harmless when repeated', async () => {
    await seed();
    const first = (await t.app.inject({ method: 'DELETE', url: '/v1/users/target-user/events', headers: as(t.demo.adminToken) })).json();
    const again = await t.app.inject({ method: 'DELETE', url: '/v1/users/target-user/events', headers: as(t.demo.adminToken) });
    expect(again.statusCode).toBe(202);
    await t.services.deletions.idle();
    const later = await t.app.inject({ method: 'DELETE', url: '/v1/users/target-user/events', headers: as(t.demo.adminToken) });
    await t.services.deletions.idle();
    const done = (await t.app.inject({ url: `/v1/deletions/${later.json().id}`, headers: as(t.demo.adminToken) })).json();
    expect(done).toMatchObject({ status: 'completed', deletedEvents: 0 });
    expect((await t.app.inject({ url: `/v1/deletions/${first.id}`, headers: as(t.demo.adminToken) })).json().status).toBe('completed');
    expect((await exportUsers(t.demo.adminToken)).sort()).toEqual(['bystander', null].sort());
  });

  it("lets no other tenant delete or see the job", async () => {
    await seed();
    const job = (await t.app.inject({ method: 'DELETE', url: '/v1/users/target-user/events', headers: as(t.demo.adminToken) })).json();
    const peek = await t.app.inject({ url: `/v1/deletions/${job.id}`, headers: as(t.other.adminToken) });
    expect(peek.statusCode).toBe(404);
    expect(peek.json().code).toBe('not_found');
    for (const headers of [{}, { 'x-svc-api-key': t.demo.apiKey }, as(t.demo.apiKey)]) {
      const refused = await t.app.inject({ method: 'DELETE', url: '/v1/users/bystander/events', headers });
      expect(refused.statusCode).toBe(401);
    }
    await t.services.deletions.idle();
    expect((await exportUsers(t.demo.adminToken)).sort()).toEqual(['bystander', null].sort());
  });

  it("erases only its own tenant's events when another tenant deletes a user of the same id", async () => {
    await seed();
    const response = await t.app.inject({ method: 'DELETE', url: '/v1/users/target-user/events', headers: as(t.other.adminToken) });
    expect(response.statusCode).toBe(202);
    await t.services.deletions.idle();
    const job = (await t.app.inject({ url: response.headers.location as string, headers: as(t.other.adminToken) })).json();
    expect(job).toMatchObject({ status: 'completed', deletedEvents: 1 });
    expect(await exportUsers(t.other.adminToken)).toEqual([]);
    expect((await exportUsers(t.demo.adminToken)).filter((u) => u === 'target-user')).toHaveLength(2);
    const rejects = await t.app.inject({ url: '/v1/rejected-events', headers: as(t.demo.adminToken) });
    expect(rejects.json().data).toHaveLength(1);
  });

  it('keeps only a hash of the userId in the job', async () => {
    const response = await t.app.inject({ method: 'DELETE', url: '/v1/users/very-unique-user-id-123/events', headers: as(t.demo.adminToken) });
    await t.services.deletions.idle();
    const stored = await t.services.storage.deletions.get(t.demo.seq, response.json().id);
    expect(stored!.userHash).toBe(createHash('sha256').update('very-unique-user-id-123').digest('hex'));
    expect(JSON.stringify(stored)).not.toContain('very-unique-user-id-123');
    expect(response.body).not.toContain('very-unique-user-id-123');
  });
});

describe('deletion worker', () => {
  it('resumes a job left pending by an earlier process', async () => {
    const t = await startTestApp();
    const at = new Date(Date.now() - 1000);
    await t.app.inject({ method: 'POST', url: '/v1/events', headers: { 'x-svc-api-key': t.demo.apiKey }, payload: validEvent('poll.voted', at, { userId: 'left-behind' }) });
    const { hashUserId } = await import('@svc/storage');
    await t.services.storage.deletions.create({
      id: 'del_resume', tenantSeq: t.demo.seq, userHash: hashUserId('left-behind'), status: 'pending',
      requestedAt: Date.now(), completedAt: null, purgedAt: null, deletedEvents: null, deletedRejects: null, error: null,
    });
    t.services.startBackgroundWork();
    await t.services.deletions.idle();
    const job = (await t.app.inject({ url: '/v1/deletions/del_resume', headers: { authorization: `Bearer ${t.demo.adminToken}` } })).json();
    expect(job).toMatchObject({ status: 'completed', deletedEvents: 1 });
    await t.close();
  });
});

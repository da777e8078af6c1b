import { uuidv7 } from 'uuidv7';

/**
 * A hand-built dataset whose answers were worked out by hand (see each expectation):
 * S1 (u1, b1, DE) votes twice and buys o1, which is reported twice; S2 (u2, b1, FR) taps a
 * sponsor moment and skips the cart on its way to o2; S3 (anonymous, b2, DE) straddles
 * midnight and buys o3 in USD; S4 (u1 again, b2, DE) enters a contest and never leaves.
 */
export const D10 = '2026-11-10T';
export const D11 = '2026-11-11T';
const item = (productId: string, quantity: number, unitPrice: number, currency = 'EUR') => ({ productId, quantity, unitPrice, currency });

function ev(event: string, at: string, session: string, broadcastId: string, country: string, userId: string | null, extra: Record<string, unknown> = {}) {
  return { event, eventId: uuidv7(), timestamp: at, sessionId: session, broadcastId, country, userId, data: {}, ...extra };
}
const commerce = (sponsorId: string, items: unknown[], total: number, orderId: string | null = null) => ({ sponsorId, items, total, orderId });

const S1 = ['svc_s1', 'b1', 'DE', 'u1'] as const;
const S2 = ['svc_s2', 'b1', 'FR', 'u2'] as const;
const S3 = ['svc_s3', 'b2', 'DE', null] as const;
const S4 = ['svc_s4', 'b2', 'DE', 'u1'] as const;

export const EVENTS = [
  ev('broadcast.joined', `${D10}10:00:00Z`, ...S1),
  ev('poll.voted', `${D10}10:01:00Z`, ...S1, { data: { pollId: 'p1', questionText: 'Who wins?', optionSelected: 'A', optionIndex: 0 } }),
  ev('poll.voted', `${D10}10:02:00Z`, ...S1, { data: { pollId: 'p1', questionText: 'Who wins?', optionSelected: 'B', optionIndex: 1 } }),
  ev('product.viewed', `${D10}10:03:00Z`, ...S1, { data: { productId: 'x', placement: 'carousel' }, ...commerce('acme', [], 0) }),
  ev('cart.item_added', `${D10}10:04:00Z`, ...S1, { data: { productId: 'x', quantity: 2 }, ...commerce('acme', [item('x', 2, 10)], 20) }),
  ev('checkout.started', `${D10}10:05:00Z`, ...S1, { ...commerce('acme', [item('x', 2, 10)], 20) }),
  ev('checkout.completed', `${D10}10:06:00Z`, ...S1, { data: { currency: 'EUR' }, ...commerce('acme', [item('x', 2, 10)], 20, 'o1') }),
  ev('checkout.completed', `${D10}10:07:00Z`, ...S1, { data: { currency: 'EUR' }, ...commerce('acme', [item('x', 2, 10)], 20, 'o1') }),
  ev('broadcast.left', `${D10}10:10:00Z`, ...S1, { data: { reason: 'closed', watchedMs: 600_000 } }),

  ev('broadcast.joined', `${D10}10:00:30Z`, ...S2),
  ev('poll.voted', `${D10}10:02:30Z`, ...S2, { data: { pollId: 'p1', questionText: 'Who wins?', optionSelected: 'B', optionIndex: 1 } }),
  ev('sponsor_moment.viewed', `${D10}10:03:00Z`, ...S2, { data: { momentId: 'm1', sponsorId: 'acme' } }),
  ev('sponsor_moment.tapped', `${D10}10:03:30Z`, ...S2, { data: { momentId: 'm1', sponsorId: 'acme' } }),
  ev('product.viewed', `${D10}10:04:00Z`, ...S2, { data: { productId: 'y', placement: 'banner' }, ...commerce('acme', [], 0) }),
  ev('checkout.started', `${D10}10:05:00Z`, ...S2, { ...commerce('acme', [item('y', 1, 5)], 5) }),
  ev('checkout.completed', `${D10}10:06:00Z`, ...S2, { data: { currency: 'EUR' }, ...commerce('acme', [item('y', 1, 5)], 5, 'o2') }),
  ev('broadcast.left', `${D10}10:08:00Z`, ...S2, { data: { reason: 'closed', watchedMs: 450_000 } }),

  ev('broadcast.joined', `${D10}23:59:30Z`, ...S3),
  ev('sponsor_moment.viewed', `${D11}00:00:30Z`, ...S3, { data: { momentId: 'm2', sponsorId: 'bolt' } }),
  ev('checkout.completed', `${D11}00:01:00Z`, ...S3, { data: { currency: 'USD' }, ...commerce('bolt', [item('z', 3, 33.33, 'USD')], 100, 'o3') }),
  ev('broadcast.left', `${D11}00:02:00Z`, ...S3, { data: { reason: 'closed', watchedMs: 150_000 } }),

  ev('broadcast.joined', `${D11}10:00:00Z`, ...S4),
  ev('contest.entered', `${D11}10:00:10Z`, ...S4, { data: { contestId: 'c1', title: 'Win' } }),
];


type App = import('fastify').FastifyInstance;

/**
 * Creates the tenant's poll on b1 ("Who wins?", A or B): only votes on a poll the service knows
 * count. The events name it `p1`; the service chose its real id, which they get instead.
 */
async function withPoll(app: App, admin: Record<string, string>, events: typeof EVENTS): Promise<{ pollId: string; events: typeof EVENTS }> {
  await app.inject({ method: 'POST', url: '/v1/broadcasts', headers: admin, payload: { id: 'b1', campaignId: 1 } });
  const created = await app.inject({ method: 'POST', url: '/v1/broadcasts/b1/overlays', headers: admin, payload: { type: 'poll', question: 'Who wins?', options: ['A', 'B'] } });
  if (created.statusCode !== 201) throw new Error(`poll not created: ${created.body}`);
  const pollId = String(created.json().id);
  return { pollId, events: events.map((e) => ((e.data as { pollId?: string }).pollId === 'p1' ? { ...e, data: { ...e.data, pollId } } : e)) };
}

/** Loads the dataset into a test app: campaign 2 holds broadcast b2; sponsors acme and bolt exist; returns the id of poll `p1`. */
export async function loadAnalyticsFixture(app: App, adminToken: string): Promise<{ pollId: string }> {
  const admin = { authorization: `Bearer ${adminToken}` };
  await app.inject({ method: 'POST', url: '/v1/campaigns', headers: admin, payload: { id: 2, name: 'Finals' } });
  await app.inject({ method: 'POST', url: '/v1/broadcasts', headers: admin, payload: { id: 'b2', campaignId: 2 } });
  for (const [id, name] of [['acme', 'Acme Sports'], ['bolt', 'Bolt Energy']]) {
    await app.inject({ method: 'POST', url: '/v1/sponsors', headers: admin, payload: { id, name } });
  }
  const { pollId, events } = await withPoll(app, admin, EVENTS);
  const response = await app.inject({ method: 'POST', url: '/v1/events', headers: admin, payload: { events } });
  if (response.json().accepted !== EVENTS.length) throw new Error(`fixture not stored: ${response.body}`);
  return { pollId };
}

/**
 * Tenant `other`'s events on the same days: one session reusing demo's ids (session svc_s1,
 * user u1, broadcast b1, poll p1, sponsor acme, order o1) so that a key hashed without its
 * tenant would mix the two, and one session of its own (svc_o2, anonymous, b2).
 */
export const OTHER_TENANT_EVENTS = [
  ev('broadcast.joined', `${D10}10:00:00Z`, ...S1),
  ev('poll.voted', `${D10}10:01:30Z`, ...S1, { data: { pollId: 'p1', questionText: 'Who wins?', optionSelected: 'B', optionIndex: 1 } }),
  ev('sponsor_moment.viewed', `${D10}10:02:00Z`, ...S1, { data: { momentId: 'm1', sponsorId: 'acme' } }),
  ev('checkout.completed', `${D10}10:06:00Z`, ...S1, { data: { currency: 'EUR' }, ...commerce('acme', [item('w', 1, 999)], 999, 'o1') }),
  ev('broadcast.joined', `${D11}09:00:00Z`, 'svc_o2', 'b2', 'FR', null),
];

/** Loads OTHER_TENANT_EVENTS with tenant `other`'s admin token (with a poll of its own); returns the id of its poll `p1`. */
export async function loadOtherTenantEvents(app: App, adminToken: string): Promise<{ pollId: string }> {
  const admin = { authorization: `Bearer ${adminToken}` };
  await app.inject({ method: 'POST', url: '/v1/sponsors', headers: admin, payload: { id: 'acme', name: 'Acme of another tenant' } });
  const { pollId, events } = await withPoll(app, admin, OTHER_TENANT_EVENTS);
  const response = await app.inject({ method: 'POST', url: '/v1/events', headers: admin, payload: { events } });
  if (response.json().accepted !== OTHER_TENANT_EVENTS.length) throw new Error(`other tenant's events not stored: ${response.body}`);
  return { pollId };
}

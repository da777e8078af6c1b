import { seededRandom, type PollDefinition } from '@svc/protocol';
import type { AnalyticsFilter, Storage } from '../src';
import type { EventRow } from '../src/records';

/**
 * The dashboard's test dataset, shared by the rollup tests (DuckDB) and the ClickHouse
 * analytics tests: one tenant's sessions with every kind of event the panels read, its polls,
 * and filters that cut the range anywhere. Seeded, so a failing seed can be replayed.
 */
export const HOUR = 3_600_000;
export const START = Date.UTC(2026, 10, 10, 8, 0, 0);
export const SETTINGS = {
  theme: { primaryColor: '#000000' },
  featureFlags: { lineup: true, payments: true, polls: true, contests: true, sponsorMoments: true },
  localization: { defaultLanguage: 'en' }, availableMarkets: [], fallbackCountry: null, defaultCurrency: 'EUR',
  allowedOrigins: [], commerceApiKey: '', defaultCampaignId: 1,
};

const BROADCASTS = [['b1', 1], ['b2', 1], ['b3', 2]] as const;

/**
 * The tenant's polls: two per broadcast, the second created three hours in, so that the votes
 * naming it before then (about a poll the service did not know yet) never count.
 */
export function pollsOf(): PollDefinition[] {
  return BROADCASTS.flatMap(([broadcastId]) =>
    [0, 1].map((n) => ({
      id: `${broadcastId}-p${n}`,
      broadcastId,
      question: `Question of ${broadcastId}`,
      options: ['Option 0', 'Option 1', 'Option 2'],
      createdAtMs: n === 0 ? START - HOUR : START + 3 * HOUR,
    })),
  );
}

export async function createPolls(storage: Pick<Storage, 'content'>, tenantSeq: number): Promise<void> {
  for (const poll of pollsOf()) {
    await storage.content.createOverlay({
      tenantSeq, broadcastId: poll.broadcastId, id: poll.id, type: 'poll', content: { type: 'poll', question: poll.question, options: [...poll.options] },
      active: true, createdAt: poll.createdAtMs, updatedAt: poll.createdAtMs, shownAt: poll.createdAtMs,
    });
  }
}

/** Draws from a seeded source, so that a failing seed can be replayed. */
function random(seed: number): { int(n: number): number; pick<T>(items: readonly T[]): T; chance(p: number): boolean } {
  const next = seededRandom(seed);
  return { int: (n) => Math.floor(next() * n), pick: (items) => items[Math.floor(next() * items.length)]!, chance: (p) => next() < p };
}

/**
 * Sessions over six hours of three broadcasts (two campaigns), with every kind of event the
 * panels read, votes cast twice, orders reported twice, steps skipped, sessions that straddle
 * hours. Every event has its own millisecond, so "first" is never a tie.
 */
export function dataset(seed: number, tenantSeq: number): EventRow[] {
  const r = random(seed);
  const events: EventRow[] = [];
  const used = new Set<number>();
  let idCounter = 0;
  const broadcasts = BROADCASTS;
  for (let s = 0; s < 70; s++) {
    const [broadcastId, campaignId] = r.pick(broadcasts);
    const session = { sessionId: `svc_s${seed}_${s}`, broadcastId, campaignId, country: r.pick(['DE', 'FR', 'GB', null]), userId: r.chance(0.6) ? `u${r.int(12)}` : null };
    let t = START + r.int(6 * HOUR);
    const add = (event: string, data: Record<string, unknown> = {}, commerce: Partial<EventRow> = {}) => {
      t += 1 + r.int(r.chance(0.1) ? 40 * 60_000 : 90_000);
      while (used.has(t)) t++;
      used.add(t);
      idCounter++;
      events.push({
        tenantSeq, eventId: `0190a6a0-${seed.toString(16).padStart(4, '0')}-7000-8000-${idCounter.toString(16).padStart(12, '0')}`, event,
        userId: session.userId, sessionId: session.sessionId, broadcastId: session.broadcastId, campaignId: session.campaignId,
        timestampMs: t, receivedAtMs: t, country: session.country, orderId: null, sponsorId: null, total: null, items: null,
        data: JSON.stringify(data), ...commerce,
      });
    };
    if (r.chance(0.85)) add('broadcast.joined');
    for (let n = 3 + r.int(10); n > 0; n--) {
      const sponsor = r.pick(['acme', 'bolt', null]);
      const items = [{ productId: 'p', quantity: 1 + r.int(3), unitPrice: 9.99, currency: 'EUR' }];
      const total = items[0]!.quantity * 9.99;
      switch (r.int(9)) {
        case 0: {
          // Mostly votes as the gateway writes them; some forged (an option the poll lacks, another
          // label, a poll of another broadcast or none), as an HTTP sender can store them.
          const option = r.chance(0.1) ? 99 : r.int(3);
          const label = r.chance(0.1) ? 'Attacker label' : `Option ${option}`;
          const pollId = r.chance(0.1) ? `${r.pick(broadcasts)[0]}-p${r.int(3)}` : `${broadcastId}-p${r.int(2)}`;
          add('poll.voted', { pollId, questionText: `Question of ${broadcastId}`, optionSelected: label, optionIndex: option });
          break;
        }
        case 1: add(r.pick(['sponsor_moment.viewed', 'sponsor_moment.viewed', 'sponsor_moment.tapped']), { momentId: 'm', sponsorId: r.pick(['acme', 'bolt']) }); break;
        case 2: {
          const name = r.pick(['contest.entered', 'product.tapped', 'lineup.viewed']);
          add(name, name === 'contest.entered' ? { contestId: `c${n % 3}`, title: 'Win' } : {});
          break;
        }
        case 3: add('product.viewed', { productId: 'p' }, { sponsorId: sponsor, items: '[]', total: 0 }); break;
        case 4: add('cart.item_added', { productId: 'p' }, { sponsorId: sponsor, items: JSON.stringify(items), total }); break;
        case 5: add('checkout.started', {}, { sponsorId: sponsor, items: JSON.stringify(items), total }); break;
        case 6: {
          const orderId = `o${r.int(40)}`; // some orders are reported twice, even from two sessions
          add('checkout.completed', { currency: r.pick(['EUR', 'EUR', 'USD']) }, { sponsorId: sponsor, orderId, items: JSON.stringify(items), total });
          break;
        }
        default: add('poll.viewed', { pollId: `${broadcastId}-p0` });
      }
    }
    if (r.chance(0.7)) add('broadcast.left', { reason: 'closed' });
  }
  return events;
}

export function filters(seed: number, tenantSeq: number): AnalyticsFilter[] {
  const r = random(seed * 7 + 1);
  const ranges: Array<[number | undefined, number | undefined]> = [
    [undefined, undefined],
    [START - HOUR, START + 12 * HOUR],
    [START + 2 * HOUR, START + 4 * HOUR], // whole hours only
    [START + HOUR + 1234, START + 5 * HOUR - 4321], // part-hours at both ends
    [START + 2 * HOUR + 100, START + 2 * HOUR + 50 * 60_000], // inside one hour
    [START + 3 * HOUR - 1, START + 3 * HOUR + 1], // across one hour boundary
    [START - HOUR / 2 + 5, START + 20 * HOUR + 123], // part-hours with no events outside the range
    [undefined, START + 3 * HOUR + 17],
    [START + 3 * HOUR + 17, undefined],
  ];
  for (let i = 0; i < 6; i++) {
    const from = START + r.int(7 * HOUR);
    ranges.push([from, from + r.int(4 * HOUR)]);
  }
  const narrowings: Array<Partial<AnalyticsFilter>> = [{}, { campaignId: 1 }, { broadcastId: 'b3' }, { country: 'DE' }, { sponsorId: 'acme' }, { broadcastId: 'b1', country: 'FR', sponsorId: 'bolt' }];
  return ranges.flatMap(([fromMs, toMs], i) => [narrowings[0], narrowings[1 + (i % (narrowings.length - 1))]].map((n) => ({ tenantSeq, fromMs, toMs, ...n })));
}

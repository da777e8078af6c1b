import { seededRandom } from '@svc/protocol';
import { uuidv7 } from 'uuidv7';

export interface SampleBroadcast {
  id: string;
  campaignId: number;
  title: string;
  startsAt: number;
}

export interface SampleDataset {
  campaigns: Array<{ id: number; name: string }>;
  sponsors: Array<{ id: string; name: string }>;
  broadcasts: SampleBroadcast[];
  /** The polls the events vote on; the loader creates them (the service names them) and renames `pollId` in the events. */
  polls: Array<{ pollId: string; broadcastId: string; question: string; options: string[] }>;
  events: Array<Record<string, unknown>>;
}

const COUNTRIES = ['DE', 'DE', 'DE', 'FR', 'FR', 'GB', 'IT', 'ES', 'NL', 'AT'];
const PRODUCTS = [
  { productId: 'jersey-home', name: 'Home jersey', price: 79.9, sponsorId: 'acme' },
  { productId: 'scarf', name: 'Club scarf', price: 24.5, sponsorId: 'acme' },
  { productId: 'cap', name: 'Team cap', price: 19.9, sponsorId: 'bolt' },
  { productId: 'ball', name: 'Match ball', price: 39, sponsorId: 'bolt' },
];
const POLLS = [
  { question: 'Who wins tonight?', options: ['Home', 'Away', 'Draw'] },
  { question: 'Player of the match?', options: ['Ada', 'Bo', 'Cy', 'Dee'] },
];

/**
 * Weeks of plausible activity for the demo tenant: several campaigns, broadcasts, sponsors,
 * countries, polls and orders, so that a newcomer's first dashboard is full.
 */
export function sampleDataset(now: number, options: { days?: number; viewersPerBroadcast?: number; seed?: number } = {}): SampleDataset {
  const random = seededRandom(options.seed ?? 42);
  const days = options.days ?? 21;
  const viewersPerBroadcast = options.viewersPerBroadcast ?? 60;
  const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)]!;
  const campaigns = [
    { id: 1, name: 'Default campaign' },
    { id: 2, name: 'Autumn league' },
    { id: 3, name: 'Cup nights' },
  ];
  const sponsors = [
    { id: 'acme', name: 'Acme Sports' },
    { id: 'bolt', name: 'Bolt Energy' },
  ];
  const broadcasts: SampleBroadcast[] = [];
  for (let day = days; day >= 1; day -= 3) {
    // Kick-off at 19:00 UTC on that day.
    const startsAt = Math.floor((now - day * 86_400_000) / 86_400_000) * 86_400_000 + 19 * 3_600_000;
    broadcasts.push({ id: `match-${days - day + 1}`, campaignId: day % 2 ? 2 : 3, title: `Matchday ${days - day + 1}`, startsAt });
  }
  const events: Array<Record<string, unknown>> = [];
  const allPolls: SampleDataset['polls'] = [];
  for (const broadcast of broadcasts) {
    const polls = POLLS.map((poll, i) => ({ ...poll, pollId: `${broadcast.id}-poll-${i + 1}`, broadcastId: broadcast.id }));
    allPolls.push(...polls);
    for (let v = 0; v < viewersPerBroadcast; v++) {
      const sessionId = `svc_sample${uuidv7().replace(/-/g, '')}`;
      const userId = random() < 0.6 ? `fan-${Math.floor(random() * 400)}` : null;
      const country = pick(COUNTRIES);
      let at = broadcast.startsAt + Math.floor(random() * 20 * 60_000);
      const watchMs = 5 * 60_000 + Math.floor(random() * 85 * 60_000);
      const end = at + watchMs;
      const base = { sessionId, broadcastId: broadcast.id, userId, country };
      const push = (event: string, data: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
        events.push({ event, eventId: uuidv7(), timestamp: new Date(at).toISOString(), data, ...base, ...extra });
        at += 10_000 + Math.floor(random() * 120_000);
      };
      push('broadcast.joined', {});
      push('lineup.viewed', { lineupId: `${broadcast.id}-lineup` });
      for (const poll of polls) {
        if (at > end) break;
        push('poll.viewed', { pollId: poll.pollId, questionText: poll.question });
        if (random() < 0.3) {
          const index = Math.floor(random() * poll.options.length);
          push('poll.voted', { pollId: poll.pollId, questionText: poll.question, optionSelected: poll.options[index], optionIndex: index });
        }
      }
      const sponsor = pick(sponsors);
      if (at < end) {
        push('sponsor_moment.viewed', { momentId: `${broadcast.id}-${sponsor.id}`, sponsorId: sponsor.id });
        if (random() < 0.2) push('sponsor_moment.tapped', { momentId: `${broadcast.id}-${sponsor.id}`, sponsorId: sponsor.id });
      }
      if (random() < 0.3) push('contest.viewed', { contestId: `${broadcast.id}-contest`, title: 'Win a signed jersey' });
      if (random() < 0.15) push('contest.entered', { contestId: `${broadcast.id}-contest`, title: 'Win a signed jersey' });
      const product = pick(PRODUCTS);
      const none = { orderId: null, sponsorId: product.sponsorId, items: [], total: 0 };
      push('product.viewed', { productId: product.productId, placement: random() < 0.7 ? 'carousel' : 'banner' }, none);
      if (random() < 0.35) {
        push('product.tapped', { productId: product.productId }, none);
        const quantity = random() < 0.8 ? 1 : 2;
        const items = [{ productId: product.productId, name: product.name, quantity, unitPrice: product.price, currency: 'EUR' }];
        const cart = { orderId: null, sponsorId: product.sponsorId, items, total: Math.round(product.price * quantity * 100) / 100 };
        if (random() < 0.7) {
          push('cart.item_added', { productId: product.productId, quantity }, cart);
          if (random() < 0.6) {
            push('checkout.started', {}, cart);
            if (random() < 0.7) push('checkout.completed', { currency: 'EUR' }, { ...cart, orderId: `ord_${uuidv7()}` });
            else push('checkout.abandoned', { step: 'payment' }, cart);
          }
        }
      }
      at = Math.max(at, end);
      push('broadcast.left', { reason: random() < 0.8 ? 'closed' : 'disconnect', watchedMs: watchMs });
    }
  }
  return { campaigns, sponsors, broadcasts, polls: allPolls, events };
}

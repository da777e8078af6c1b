/** The cards of each overlay type, drawn from an overlay and what this viewer did. */
import type { PollResults } from '@svc/protocol';
import type { Strings } from '../i18n';
import { countdown, el, money } from './dom';
import type { Overlay as ViewerOverlay } from '@svc/protocol';

export interface CardContext {
  strings: Strings;
  /** Locale of numbers, prices and times. */
  locale: string;
  serverNow(): number;
  results(pollId: string): PollResults | undefined;
  /** The option this viewer voted for. */
  voted(pollId: string): number | undefined;
  entered(contestId: string): boolean;
  /** Whether the server still takes votes or entries (a viewer behind the live edge may see one it hid). */
  open(overlayId: string): boolean;
  vote(pollId: string, optionIndex: number): void;
  enter(contestId: string): void;
  tapSponsor(overlay: ViewerOverlay): void;
  tapProduct(overlay: ViewerOverlay): void;
  addToCart(overlay: ViewerOverlay): void;
}

/** Whether a poll or contest has passed its `closesAt` (server time). */
export function isClosed(overlay: ViewerOverlay, serverNowMs: number): boolean {
  const closesAt = closesAtOf(overlay);
  return closesAt !== undefined && Date.parse(closesAt) <= serverNowMs;
}

export function closesAtOf(overlay: ViewerOverlay): string | undefined {
  const closesAt = overlay.type === 'poll' || overlay.type === 'contest' ? overlay.closesAt : undefined;
  // A time this browser cannot read has no countdown (the server still closes it).
  return closesAt !== undefined && Number.isFinite(Date.parse(closesAt)) ? closesAt : undefined;
}

export function renderCard(overlay: ViewerOverlay, c: CardContext): HTMLElement {
  const card = el('section', { class: `card ${overlay.type}`, 'data-overlay': overlay.id, 'data-type': overlay.type });
  switch (overlay.type) {
    case 'poll':
      pollCard(card, overlay, c);
      break;
    case 'contest':
      contestCard(card, overlay, c);
      break;
    case 'lineup':
      lineupCard(card, overlay, c);
      break;
    case 'sponsor_moment':
      momentCard(card, overlay, c);
      break;
    case 'product':
      productCard(card, overlay, c);
      break;
  }
  return card;
}

/** "Poll · Closes in 0:42": the kind of card and, when it closes, the time left (kept ticking by the element). */
function header(label: string, overlay: ViewerOverlay, c: CardContext, closedText: string): HTMLElement {
  const head = el('div', { class: 'label' }, label);
  const closesAt = closesAtOf(overlay);
  if (closesAt) {
    const closed = isClosed(overlay, c.serverNow());
    const clock = el('span', { class: 'countdown', 'data-closes': closesAt });
    clock.textContent = closed ? closedText : c.strings.closesIn(countdown(Date.parse(closesAt) - c.serverNow()));
    head.append(' · ', clock);
  }
  return head;
}

function pollCard(card: HTMLElement, poll: Extract<ViewerOverlay, { type: 'poll' }>, c: CardContext): void {
  const s = c.strings;
  const headingId = `q-${poll.id}`;
  card.setAttribute('aria-labelledby', headingId);
  card.append(header(s.poll, poll, c, s.pollClosed), el('h3', { id: headingId }, poll.question));
  const mine = c.voted(poll.id);
  const closed = isClosed(poll, c.serverNow());
  const results = c.results(poll.id);
  if (mine === undefined && !closed && c.open(poll.id)) {
    const options = el('div', { class: 'options', role: 'group', 'aria-labelledby': headingId });
    poll.options.forEach((option, index) => {
      const button = el('button', { type: 'button', 'data-key': `opt-${index}` }, option);
      button.addEventListener('click', () => c.vote(poll.id, index));
      options.append(button);
    });
    card.append(options);
  } else {
    const list = el('ul', { class: 'results' });
    poll.options.forEach((option, index) => {
      const row = el('li', { class: index === mine ? 'result mine' : 'result' });
      const label = el('div', { class: 'result-label' });
      label.append(el('span', { class: 'option' }, option), el('span', { class: 'share' }));
      const track = el('div', { class: 'track', 'aria-hidden': 'true' });
      track.append(el('span', { class: 'fill' }));
      row.append(label, track);
      if (index === mine) row.append(el('span', { class: 'sr' }, s.youVoted));
      list.append(row);
    });
    card.append(list);
  }
  const meta = el('p', { class: 'meta' });
  meta.append(el('span', { class: 'total' }));
  if (mine !== undefined) meta.append(' · ', el('span', {}, s.voted));
  card.append(meta);
  refreshPoll(card, results, s);
}

/**
 * Writes the live numbers (total, each option's share and bar) into a poll's card in place: they
 * change every second in a busy poll, and redrawing the card would drop a tap in progress.
 */
export function refreshPoll(card: HTMLElement, results: PollResults | undefined, strings: Strings): void {
  const total = results?.total ?? 0;
  const totalText = strings.votes(total);
  const totalNode = card.querySelector('.total');
  if (totalNode && totalNode.textContent !== totalText) totalNode.textContent = totalText;
  card.querySelectorAll<HTMLElement>('.result').forEach((row, index) => {
    const share = total ? Math.round(((results?.counts[index] ?? 0) / total) * 100) : 0;
    const shareNode = row.querySelector('.share')!;
    if (shareNode.textContent !== `${share}%`) shareNode.textContent = `${share}%`;
    (row.querySelector('.fill') as HTMLElement).style.width = `${share}%`;
  });
}

function contestCard(card: HTMLElement, contest: Extract<ViewerOverlay, { type: 'contest' }>, c: CardContext): void {
  const s = c.strings;
  card.setAttribute('aria-label', contest.title);
  card.append(header(s.contest, contest, c, s.contestClosed), el('h3', {}, contest.title));
  if (contest.description) card.append(el('p', { class: 'description' }, contest.description));
  if (c.entered(contest.id)) card.append(el('p', { class: 'done' }, s.entered));
  else if (!isClosed(contest, c.serverNow()) && c.open(contest.id)) {
    const button = el('button', { type: 'button', class: 'wide', 'data-key': 'enter' }, s.enter);
    button.addEventListener('click', () => c.enter(contest.id));
    card.append(button);
  }
}

/** The item on now: the last whose time has come, or the first when items have no times. */
export function currentItem(items: ReadonlyArray<{ at?: string }>, nowMs: number): number {
  if (!items.some((item) => item.at)) return 0;
  let current = -1;
  items.forEach((item, index) => {
    if (item.at && Date.parse(item.at) <= nowMs) current = index;
  });
  return current;
}

function lineupCard(card: HTMLElement, lineup: Extract<ViewerOverlay, { type: 'lineup' }>, c: CardContext): void {
  card.setAttribute('aria-label', c.strings.lineup);
  card.append(el('h3', {}, c.strings.lineup));
  const list = el('ol');
  const now = currentItem(lineup.items, c.serverNow());
  lineup.items.forEach((item, index) => {
    const row = el('li', index === now ? { class: 'current', 'aria-current': 'true' } : {});
    const time = item.at ? new Date(item.at).toLocaleTimeString(c.locale, { hour: '2-digit', minute: '2-digit' }) : '';
    if (index === now) row.append(el('span', { class: 'badge' }, c.strings.now));
    else if (time) row.append(el('span', { class: 'time' }, time));
    row.append(el('span', { class: 'title' }, item.title));
    list.append(row);
  });
  card.append(list);
}

function momentCard(card: HTMLElement, moment: Extract<ViewerOverlay, { type: 'sponsor_moment' }>, c: CardContext): void {
  const sponsor = moment.sponsor?.name;
  card.setAttribute('aria-label', sponsor ? `${c.strings.sponsoredBy}: ${sponsor}` : c.strings.sponsoredBy);
  card.append(logo(moment.sponsor?.logoUrl ?? moment.imageUrl, sponsor ?? moment.sponsorId));
  const text = el('div', { class: 'moment-text' });
  text.append(el('div', { class: 'label' }, sponsor ? `${c.strings.sponsoredBy} · ${sponsor}` : c.strings.sponsoredBy), el('p', { class: 'message' }, moment.message));
  card.append(text);
  if (moment.ctaUrl) {
    const link = el('a', { class: 'cta', href: moment.ctaUrl, target: '_blank', rel: 'noopener', 'data-key': 'cta' }, c.strings.learnMore);
    link.addEventListener('click', () => c.tapSponsor(moment));
    card.append(link);
  }
}

function productCard(card: HTMLElement, product: Extract<ViewerOverlay, { type: 'product' }>, c: CardContext): void {
  card.setAttribute('aria-label', product.name);
  const nameId = `n-${product.id}`;
  const main = el('button', { type: 'button', class: 'product-main', 'data-key': 'name' });
  main.append(el('span', { class: 'name', id: nameId }, product.name), el('span', { class: 'price' }, money(product.price, product.currency, c.locale)));
  main.addEventListener('click', () => c.tapProduct(product));
  // The label, or a "+" where the card is one row (dense carousel); the name stays "Add to cart".
  const add = el('button', { type: 'button', class: 'add', 'data-key': 'add', 'aria-describedby': nameId });
  add.append(el('span', { class: 'add-label' }, c.strings.addToCart), el('span', { class: 'add-icon', 'aria-hidden': 'true' }, '+'));
  add.addEventListener('click', () => c.addToCart(product));
  card.append(logo(product.imageUrl, product.name), main, add);
}

/** An image, or a tile with the initial when there is none (decorative: the name is next to it). */
function logo(url: string | undefined, name: string): HTMLElement {
  if (url) return el('img', { class: 'thumb', src: url, alt: '', loading: 'lazy', decoding: 'async' });
  return el('span', { class: 'thumb tile', 'aria-hidden': 'true' }, (name.trim()[0] ?? '•').toUpperCase());
}

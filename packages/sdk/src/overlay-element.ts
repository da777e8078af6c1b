import { productIdOf, type OverlayState, type SvcClient } from './client';
import { ulid } from './ids';
import { stringsFor, type Strings } from './i18n';
import { Cart } from './overlay/cart';
import { closesAtOf, currentItem, isClosed, refreshPoll, renderCard, type CardContext } from './overlay/cards';
import { themeColors } from './overlay/contrast';
import { countdown, el, money } from './overlay/dom';
import { OVERLAY_CSS } from './overlay/overlay-css';
import { arrange, groupOverlays, type PlayerSize, type Slot } from './overlay/overlay-layout';
import { dueOverlays } from './overlay/overlay-schedule';
import { playheadServerMs, type PlayerSource } from './overlay/player-clock';
import type { Overlay as ViewerOverlay } from '@svc/protocol';

export const OVERLAY_TAG = 'svc-engagement-overlay';
/** An overlay counts as viewed once at least half of it was visible for this long. */
export const VIEWED_AFTER_MS = 1_000;
/** How long a notice (thanks, a refused vote) stays before it goes by itself. */
export const NOTICE_MS = 4_000;
/** How often a player's playhead is read: overlays appear within this of their moment. */
const PLAYHEAD_TICK_MS = 100;
/** Countdowns and lineups move on once a second. */
const CLOCK_TICK_MS = 1_000;
/** Screen readers hear live results at most this often. */
const ANNOUNCE_EVERY_MS = 3_000;
/** The first reading waits this long for the results that follow a vote. */
const ANNOUNCE_SETTLE_MS = 400;

/** The element's own API besides the attribute-free defaults. */
export interface OverlayElement extends HTMLElement {
  /** The viewer's player: overlays appear when its playhead reaches the moment they were shown. */
  player: PlayerSource | null;
}

/**
 * Defines `<svc-engagement-overlay>` on first use (never at import, so server rendering is
 * safe). The element renders the SDK's state into its shadow root, placed by the layout model.
 */
export function defineOverlayElement(getClient: () => SvcClient | null): void {
  if (typeof customElements === 'undefined' || customElements.get(OVERLAY_TAG)) return;

  class SvcEngagementOverlayElement extends HTMLElement implements OverlayElement {
    private readonly root: ShadowRoot;
    private readonly frame = el('div', { class: 'frame', 'data-mode': 'wide' });
    private readonly areas = {
      north: el('div', { class: 'north' }),
      middle: el('div', { class: 'middle' }),
      west: el('div', { class: 'west' }),
      east: el('div', { class: 'east' }),
      south: el('div', { class: 'south' }),
    };
    private readonly slots: Record<Slot, HTMLElement> = {
      banner: el('div', { class: 'banner' }),
      sheet: el('div', { class: 'sheet' }),
      shelf: el('div', { class: 'shelf', role: 'region' }),
      left: this.areas.west,
      right: el('div', { class: 'aside' }),
    };
    private readonly util = el('div', { class: 'util' });
    private readonly notice = el('div', { class: 'notice', 'aria-hidden': 'true' });
    private readonly live = el('div', { class: 'sr', 'aria-live': 'polite', role: 'status' });
    private readonly cards = new Map<string, HTMLElement>();
    /** What each card was drawn from; a card is redrawn only when it changes. */
    private readonly drawn = new Map<string, string>();
    private readonly cart = new Cart();
    private cartButton: HTMLButtonElement | null = null;
    private panel: HTMLElement | null = null;
    private observer: IntersectionObserver | null = null;
    private resize: ResizeObserver | null = null;
    private size: PlayerSize = { width: 0, height: 0 };
    private readonly viewTimers = new Map<string, ReturnType<typeof setTimeout>>();
    private noticeTimer: ReturnType<typeof setTimeout> | undefined;
    private ticker: ReturnType<typeof setInterval> | undefined;
    private tickEvery = 0;
    private announced = { at: 0, timer: undefined as ReturnType<typeof setTimeout> | undefined, polls: new Set<string>() };
    /** The results each voted poll was last read out with. */
    private readonly heard = new Map<string, string>();
    /** Polls and contests with a vote or an entry on its way: a second tap waits for the answer. */
    private readonly pending = new Set<string>();
    private panelView: 'cart' | 'checkout' | null = null;
    private source: PlayerSource | null = null;
    private readonly onState = () => this.render();
    private client: SvcClient | null = null;

    constructor() {
      super();
      this.root = this.attachShadow({ mode: 'open' });
      this.notice.hidden = true;
      this.areas.south.append(this.slots.sheet, this.slots.shelf);
      this.areas.north.append(this.slots.banner);
      this.areas.east.append(this.util, this.slots.right);
      this.util.append(this.notice);
      const { north, middle, west, east, south } = this.areas;
      this.frame.append(north, west, middle, east, south);
      this.root.append(...this.adoptStyles(), this.frame, this.live);
    }

    get player(): PlayerSource | null {
      return this.source;
    }

    set player(player: PlayerSource | null) {
      this.source = player ?? null;
      this.render();
    }

    connectedCallback(): void {
      this.client = getClient();
      this.client?.on('state', this.onState);
      if (typeof IntersectionObserver !== 'undefined') {
        this.observer = new IntersectionObserver((entries) => this.onVisibility(entries), { threshold: [0, 0.5] });
        // Moved in the page (e.g. into a fullscreen container): the cards it kept are watched again.
        for (const card of this.cards.values()) this.observer.observe(card);
      }
      if (typeof ResizeObserver !== 'undefined') {
        this.resize = new ResizeObserver(() => this.render());
        this.resize.observe(this);
      }
      this.render();
    }

    disconnectedCallback(): void {
      this.client?.off('state', this.onState);
      this.observer?.disconnect();
      this.observer = null;
      this.resize?.disconnect();
      this.setTicker(0);
      this.clearNotice();
      clearTimeout(this.announced.timer);
      this.announced.timer = undefined;
      this.announced.polls.clear();
      for (const timer of this.viewTimers.values()) clearTimeout(timer);
      this.viewTimers.clear();
    }

    private adoptStyles(): HTMLElement[] {
      // Constructed style sheets need no nonce under a strict CSP; the <style> fallback takes one.
      if ('adoptedStyleSheets' in this.root && typeof CSSStyleSheet !== 'undefined' && 'replaceSync' in CSSStyleSheet.prototype) {
        const sheet = new CSSStyleSheet();
        sheet.replaceSync(OVERLAY_CSS);
        this.root.adoptedStyleSheets = [sheet];
        return [];
      }
      const nonce = getClient()?.styleNonce;
      return [el('style', nonce ? { nonce } : {}, OVERLAY_CSS)];
    }

    private get strings(): Strings {
      return stringsFor(this.language);
    }

    private get language(): string {
      return this.client?.state.config?.localization.defaultLanguage ?? 'en';
    }

    /** Numbers and prices in the viewer's own variant of the overlay's language (de-AT for a German overlay). */
    private get locale(): string {
      const viewer = typeof navigator !== 'undefined' ? navigator.language : '';
      return viewer && viewer.slice(0, 2).toLowerCase() === this.language.slice(0, 2).toLowerCase() ? viewer : this.language;
    }

    private serverNow(): number {
      return this.client?.serverNow() ?? Date.now();
    }

    /** Which overlays the configuration lets this viewer see, when the video has reached them. */
    private visible(state: OverlayState): ViewerOverlay[] {
      const config = state.config;
      if (!config) return [];
      const flags = config.featureFlags;
      const commerce = flags.payments && config.country !== null && config.availableMarkets.includes(config.country);
      const playhead = this.source ? playheadServerMs(this.source, this.serverNow()) : null;
      return dueOverlays(state.overlays, state.retired, playhead).filter((o) => {
        switch (o.type) {
          case 'poll':
            return flags.polls;
          case 'contest':
            return flags.contests;
          case 'lineup':
            return flags.lineup;
          case 'sponsor_moment':
            return flags.sponsorMoments;
          case 'product':
            return commerce;
        }
      });
    }

    private measure(): void {
      const box = this.getBoundingClientRect();
      this.size = { width: Math.round(box.width), height: Math.round(box.height) };
      this.frame.style.setProperty('--h', `${this.size.height}px`);
    }

    private render(): void {
      const state = this.client?.state;
      if (!state || !this.isConnected) return;
      if (state.config) {
        const colors = themeColors(state.config.theme.primaryColor);
        this.style.setProperty('--svc-primary', colors.primary);
        this.style.setProperty('--svc-on-primary', colors.onPrimary);
        this.style.setProperty('--svc-accent-light', colors.accentLight);
        this.style.setProperty('--svc-accent-dark', colors.accentDark);
      }
      this.measure();
      const shown = this.visible(state);
      const layout = arrange(shown, this.size);
      this.frame.setAttribute('data-mode', layout.mode);
      this.frame.toggleAttribute('data-dense', layout.dense);
      // The cart and notices sit at the top on a phone, at the top of the right column elsewhere.
      const utilHome = layout.mode === 'wide' ? this.areas.east : this.areas.north;
      if (this.util.parentElement !== utilHome) utilHome.prepend(this.util);
      if (this.panel) this.placePanel(layout.mode);

      const wanted = new Map<Slot, HTMLElement[]>();
      const placedIds = new Set<string>();
      for (const group of groupOverlays(shown)) {
        const slot = layout.placed.get(group.key);
        if (!slot) continue;
        const list = wanted.get(slot) ?? [];
        for (const overlay of group.overlays) {
          list.push(this.cardFor(overlay, state));
          placedIds.add(overlay.id);
        }
        wanted.set(slot, list);
      }
      for (const [id, card] of this.cards) if (!placedIds.has(id)) this.dropCard(id, card);
      for (const slot of Object.keys(this.slots) as Slot[]) this.fill(this.slots[slot], wanted.get(slot) ?? []);
      this.slots.shelf.setAttribute('aria-label', this.strings.shop);
      this.slots.shelf.hidden = !wanted.get('shelf')?.length;
      this.renderCart(shown.some((o) => o.type === 'product'));
      this.util.hidden = !this.notice.textContent && !this.cartButton;
      const ticking = shown.some((o) => closesAtOf(o) !== undefined || o.type === 'lineup');
      this.setTicker(this.source ? PLAYHEAD_TICK_MS : ticking ? CLOCK_TICK_MS : 0);
      this.updateCountdowns();
    }

    /**
     * The card of an overlay, redrawn only when what it shows changed; a poll's live numbers are
     * written into it in place.
     */
    private cardFor(overlay: ViewerOverlay, state: OverlayState): HTMLElement {
      const now = this.serverNow();
      const open = state.overlays.some((o) => o.id === overlay.id);
      const signature = JSON.stringify([
        overlay.updatedAt,
        overlay.sponsor,
        state.votes.get(overlay.id),
        state.contests.has(overlay.id),
        isClosed(overlay, now),
        open,
        overlay.type === 'lineup' ? currentItem(overlay.items, now) : null,
        this.locale,
      ]);
      let card = this.cards.get(overlay.id);
      if (!card || this.drawn.get(overlay.id) !== signature) {
        const existing = card;
        this.drawn.set(overlay.id, signature);
        card = renderCard(overlay, this.cardContext(state));
        if (existing) this.replaceCard(existing, card);
        this.cards.set(overlay.id, card);
        this.observer?.observe(card);
      }
      if (overlay.type === 'poll') {
        const results = state.results.get(overlay.id);
        refreshPoll(card, results, this.strings);
        const reading = JSON.stringify(results?.counts ?? []);
        if (state.votes.has(overlay.id) && this.heard.get(overlay.id) !== reading) {
          this.heard.set(overlay.id, reading);
          this.announce(overlay.id);
        }
      }
      return card;
    }

    /** Swaps a redrawn card in; focus that was in it stays on the same control, or goes to its heading. */
    private replaceCard(existing: HTMLElement, card: HTMLElement): void {
      const active = this.root.activeElement;
      const hadFocus = active !== null && existing.contains(active);
      const key = hadFocus ? active.getAttribute('data-key') : null;
      card.setAttribute('data-redrawn', '');
      existing.replaceWith(card);
      this.observer?.unobserve(existing);
      if (!hadFocus) return;
      const same = key === null ? undefined : Array.from(card.querySelectorAll<HTMLElement>('[data-key]')).find((node) => node.getAttribute('data-key') === key);
      const heading = card.querySelector<HTMLElement>('h3');
      heading?.setAttribute('tabindex', '-1');
      (same ?? heading ?? card).focus();
    }

    private cardContext(state: OverlayState): CardContext {
      const client = this.client;
      const s = this.strings;
      return {
        strings: s,
        locale: this.locale,
        serverNow: () => this.serverNow(),
        results: (id) => state.results.get(id),
        voted: (id) => state.votes.get(id),
        entered: (id) => state.contests.has(id),
        open: (id) => state.overlays.some((o) => o.id === id),
        vote: (id, index) => this.once(id, () => client?.vote(id, index), s.pollClosed),
        enter: (id) => this.once(id, () => client?.enterContest(id).then(() => this.say(s.entered)), s.contestClosed),
        tapSponsor: (o) => o.type === 'sponsor_moment' && client?.track('sponsor_moment.tapped', { data: { momentId: o.id, sponsorId: o.sponsorId } }),
        tapProduct: (o) => client?.track('product.tapped', { sponsorId: o.type === 'product' ? (o.sponsorId ?? null) : null, orderId: null, items: [], total: 0, data: { productId: productIdOf(o) } }),
        addToCart: (o) => {
          if (o.type !== 'product') return;
          const line = { productId: productIdOf(o), name: o.name, quantity: 1, unitPrice: o.price, currency: o.currency, sponsorId: o.sponsorId ?? null };
          this.cart.add(line);
          client?.track('cart.item_added', { ...this.cart.fields(), sponsorId: line.sponsorId, data: { productId: line.productId, quantity: 1 } });
          // An open cart shows what will be ordered.
          if (this.panelView) this.renderPanel(this.panelView);
          else this.render();
        },
      };
    }

    /**
     * Sends a vote or an entry once at a time. A refusal because it closed (or the server hid it)
     * says so; one because it was already counted says nothing; anything else asks to try again.
     */
    private once(id: string, send: () => Promise<unknown> | undefined, closedText: string): void {
      if (this.pending.has(id)) return;
      this.pending.add(id);
      Promise.resolve(send())
        .catch((error: { code?: string }) => {
          const code = error?.code ?? '';
          if (code === 'already_voted' || code === 'already_entered') return;
          this.notify(['poll_closed', 'contest_closed', 'overlay_not_active', 'poll_vote_invalid'].includes(code) ? closedText : this.strings.failed);
        })
        .finally(() => this.pending.delete(id));
    }

    /** Puts exactly `cards` into `container`, in order, moving nodes only when something changed. */
    private fill(container: HTMLElement, cards: HTMLElement[]): void {
      const current = Array.from(container.children).filter((child) => child.hasAttribute('data-overlay'));
      if (current.length === cards.length && current.every((child, i) => child === cards[i])) return;
      for (const child of current) if (!cards.includes(child as HTMLElement)) child.remove();
      // After the utility row and before the panel, where a column holds them.
      const anchor = Array.from(container.children).find((child) => child.classList.contains('panel')) ?? null;
      for (const card of cards) container.insertBefore(card, anchor);
    }

    private dropCard(id: string, card: HTMLElement): void {
      this.observer?.unobserve(card);
      card.remove();
      this.cards.delete(id);
      this.drawn.delete(id);
      clearTimeout(this.viewTimers.get(id));
      this.viewTimers.delete(id);
    }

    private setTicker(everyMs: number): void {
      if (everyMs === this.tickEvery) return;
      clearInterval(this.ticker);
      this.tickEvery = everyMs;
      this.ticker = everyMs ? setInterval(() => this.render(), everyMs) : undefined;
    }

    private updateCountdowns(): void {
      const now = this.serverNow();
      for (const clock of Array.from(this.root.querySelectorAll<HTMLElement>('.countdown'))) {
        const left = Date.parse(clock.dataset.closes!) - now;
        const closedText = clock.closest('[data-type="contest"]') ? this.strings.contestClosed : this.strings.pollClosed;
        const text = left > 0 ? this.strings.closesIn(countdown(left)) : closedText;
        if (clock.textContent !== text) clock.textContent = text;
      }
    }

    /**
     * Live results for screen readers, politely: a moment after the vote (so the first reading
     * has the new count), then at most every few seconds, every voted poll that changed.
     */
    private announce(pollId: string): void {
      this.announced.polls.add(pollId);
      if (this.announced.timer !== undefined) return;
      const wait = Math.max(ANNOUNCE_SETTLE_MS, this.announced.at + ANNOUNCE_EVERY_MS - Date.now());
      this.announced.timer = setTimeout(() => {
        this.announced.at = Date.now();
        this.announced.timer = undefined;
        const state = this.client?.state;
        const readings = [...this.announced.polls].flatMap((id) => {
          const poll = state?.overlays.find((o) => o.id === id) ?? state?.retired.find((r) => r.overlay.id === id)?.overlay;
          if (!poll || poll.type !== 'poll') return [];
          const results = state?.results.get(id);
          return [`${poll.question} ${poll.options.map((option, i) => `${option}: ${results?.counts[i] ?? 0}`).join(', ')}`];
        });
        this.announced.polls.clear();
        if (readings.length) this.say(`${this.strings.voted}. ${readings.join('. ')}`);
      }, wait);
    }

    /** Read out politely (the live region is always in the page, so screen readers hear each change). */
    private say(text: string): void {
      this.live.textContent = text;
    }

    /** A short message that goes by itself; it is read out through the live region. */
    private notify(text: string): void {
      this.notice.textContent = text;
      this.notice.hidden = false;
      this.util.hidden = false;
      this.say(text);
      clearTimeout(this.noticeTimer);
      this.noticeTimer = setTimeout(() => {
        this.clearNotice();
        this.render();
      }, NOTICE_MS);
    }

    private clearNotice(): void {
      clearTimeout(this.noticeTimer);
      this.noticeTimer = undefined;
      this.notice.hidden = true;
      this.notice.textContent = '';
    }

    private renderCart(commerceShown: boolean): void {
      const count = this.cart.count;
      if (!commerceShown && !count && !this.panel) {
        this.cartButton?.remove();
        this.cartButton = null;
        return;
      }
      if (!this.cartButton) {
        this.cartButton = el('button', { type: 'button', class: 'cart', 'data-key': 'cart', 'aria-haspopup': 'dialog' });
        this.cartButton.addEventListener('click', () => this.renderPanel(this.panel ? null : 'cart'));
        this.util.append(this.cartButton);
      }
      this.cartButton.setAttribute('aria-expanded', String(this.panel !== null));
      this.cartButton.textContent = this.strings.cart(count);
    }

    private placePanel(mode: string): void {
      const home = mode === 'wide' ? this.areas.east : this.areas.south;
      if (!this.panel || this.panel.parentElement === home) return;
      const active = this.root.activeElement;
      const hadFocus = active instanceof HTMLElement && this.panel.contains(active);
      home.append(this.panel);
      if (hadFocus) active.focus();
    }

    private renderPanel(view: 'cart' | 'checkout' | null): void {
      const hadPanel = this.panel !== null;
      this.panelView = view;
      this.panel?.remove();
      this.panel = null;
      this.frame.removeAttribute('data-panel');
      if (!view) {
        this.render();
        if (hadPanel) this.cartButton?.focus();
        return;
      }
      const s = this.strings;
      const panel = el('section', { class: 'card panel', role: 'dialog', 'aria-label': s.cart(this.cart.count) });
      panel.addEventListener('keydown', (event) => {
        if (event.key === 'Escape') this.renderPanel(null);
      });
      for (const line of this.cart.lines) {
        const row = el('div', { class: 'row' });
        row.append(el('span', {}, `${line.quantity} × ${line.name}`), el('span', { class: 'price' }, money(line.quantity * line.unitPrice, line.currency, this.locale)));
        if (view === 'cart') {
          const remove = el('button', { type: 'button', class: 'secondary', 'data-key': `rm-${line.productId}` }, s.remove);
          remove.addEventListener('click', () => this.removeFromCart(line.productId));
          row.append(remove);
        }
        panel.append(row);
      }
      panel.append(el('div', { class: 'row price' }, money(this.cart.total, this.cart.currency, this.locale)));
      const actions = el('div', { class: 'actions' });
      const cancel = el('button', { type: 'button', class: 'secondary', 'data-key': 'cancel' }, view === 'cart' ? s.close : s.cancel);
      cancel.addEventListener('click', () => {
        if (view === 'checkout') this.client?.track('checkout.abandoned', { ...this.cart.fields(), data: { step: 'cart' } });
        this.renderPanel(null);
      });
      const go = el('button', { type: 'button', 'data-key': view === 'cart' ? 'checkout' : 'order' }, view === 'cart' ? s.checkout : s.placeOrder);
      go.disabled = this.cart.lines.length === 0;
      go.addEventListener('click', () => {
        if (view === 'cart') {
          this.client?.track('checkout.started', { ...this.cart.fields(), data: {} });
          this.renderPanel('checkout');
          return;
        }
        this.client?.track('checkout.completed', { ...this.cart.fields(`ord_${ulid()}`), data: { currency: this.cart.currency } });
        this.cart.clear();
        this.renderPanel(null);
        this.notify(s.thanks);
      });
      actions.append(cancel, go);
      panel.append(actions);
      this.panel = panel;
      this.frame.setAttribute('data-panel', '');
      this.render();
      (panel.querySelector('button:not([disabled])') as HTMLButtonElement | null)?.focus();
    }

    private removeFromCart(productId: string): void {
      const line = this.cart.remove(productId);
      if (!line) return;
      this.client?.track('cart.item_removed', { ...this.cart.fields(), sponsorId: line.sponsorId, data: { productId, quantity: line.quantity } });
      this.renderPanel('cart');
    }

    /** Timers run per overlay, so a card redrawn while visible keeps counting. */
    private onVisibility(entries: IntersectionObserverEntry[]): void {
      for (const entry of entries) {
        const overlayId = entry.target.getAttribute('data-overlay');
        if (!overlayId || this.cards.get(overlayId) !== entry.target) continue;
        if (entry.intersectionRatio >= 0.5) {
          if (this.viewTimers.has(overlayId)) continue;
          this.viewTimers.set(
            overlayId,
            setTimeout(() => {
              this.viewTimers.delete(overlayId);
              const state = this.client?.state;
              const overlay = state?.overlays.find((o) => o.id === overlayId) ?? state?.retired.find((r) => r.overlay.id === overlayId)?.overlay;
              if (overlay && this.cards.has(overlayId)) this.client?.trackViewed(overlay);
            }, VIEWED_AFTER_MS),
          );
        } else {
          clearTimeout(this.viewTimers.get(overlayId));
          this.viewTimers.delete(overlayId);
        }
      }
    }
  }

  customElements.define(OVERLAY_TAG, SvcEngagementOverlayElement);
}

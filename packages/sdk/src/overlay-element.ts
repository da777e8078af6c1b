import type { Overlay, PollResults } from '@svc/protocol';
import { productIdOf, type OverlayState, type SvcClient } from './client';
import { ulid } from './ids';
import { stringsFor, type Strings } from './i18n';
import { OVERLAY_CSS } from './overlay-styles';

export const OVERLAY_TAG = 'svc-engagement-overlay';
/** An overlay counts as viewed once at least half of it was visible for this long. */
export const VIEWED_AFTER_MS = 1_000;

interface CartLine {
  productId: string;
  name: string;
  quantity: number;
  unitPrice: number;
  currency: string;
  sponsorId: string | null;
}

type Element_ = HTMLElement;

function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, text?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

function money(amount: number, currency: string, language: string): string {
  try {
    return new Intl.NumberFormat(language, { style: 'currency', currency }).format(amount);
  } catch {
    return `${amount.toFixed(2)} ${currency}`;
  }
}

/**
 * Defines `<svc-engagement-overlay>` on first use (never at import, so server rendering is
 * safe). The element renders the SDK's state into its shadow root.
 */
export function defineOverlayElement(getClient: () => SvcClient | null): void {
  if (typeof customElements === 'undefined' || customElements.get(OVERLAY_TAG)) return;

  class SvcEngagementOverlayElement extends HTMLElement {
    private readonly root: ShadowRoot;
    private readonly cards = new Map<string, Element_>();
    /** What each card was drawn from; a card is redrawn only when it changes. */
    private readonly drawn = new Map<string, string>();
    private readonly layers: Record<'stack' | 'side' | 'shelf', Element_>;
    private readonly live: Element_;
    private readonly cart: CartLine[] = [];
    private cartButton: HTMLButtonElement | null = null;
    private panel: Element_ | null = null;
    private observer: IntersectionObserver | null = null;
    private readonly viewTimers = new Map<string, ReturnType<typeof setTimeout>>();
    private readonly onState = () => this.render();
    private client: SvcClient | null = null;

    constructor() {
      super();
      this.root = this.attachShadow({ mode: 'open' });
      const styles = this.adoptStyles();
      this.layers = { stack: el('div', { class: 'stack' }), side: el('div', { class: 'side' }), shelf: el('div', { class: 'shelf' }) };
      this.live = el('div', { class: 'sr', 'aria-live': 'polite', role: 'status' });
      this.root.append(...styles, this.layers.stack, this.layers.side, this.layers.shelf, this.live);
    }

    connectedCallback(): void {
      this.client = getClient();
      this.client?.on('state', this.onState);
      if (typeof IntersectionObserver !== 'undefined') {
        this.observer = new IntersectionObserver((entries) => this.onVisibility(entries), { threshold: [0, 0.5] });
      }
      this.render();
    }

    disconnectedCallback(): void {
      this.client?.off('state', this.onState);
      this.observer?.disconnect();
      for (const timer of this.viewTimers.values()) clearTimeout(timer);
    }

    private adoptStyles(): Element_[] {
      // Constructed style sheets need no nonce under a strict CSP; the <style> fallback takes one.
      if ('adoptedStyleSheets' in this.root && typeof CSSStyleSheet !== 'undefined' && 'replaceSync' in CSSStyleSheet.prototype) {
        const sheet = new CSSStyleSheet();
        sheet.replaceSync(OVERLAY_CSS);
        this.root.adoptedStyleSheets = [sheet];
        return [];
      }
      const style = el('style', getClient()?.styleNonce ? { nonce: getClient()!.styleNonce! } : {}, OVERLAY_CSS);
      return [style];
    }

    private get strings(): Strings {
      return stringsFor(this.client?.state.config?.localization.defaultLanguage);
    }

    private get language(): string {
      return this.client?.state.config?.localization.defaultLanguage ?? 'en';
    }

    /** Which overlays the configuration lets this viewer see. */
    private visible(state: OverlayState): Overlay[] {
      const config = state.config;
      if (!config) return [];
      const flags = config.featureFlags;
      const commerce = flags.payments && config.country !== null && config.availableMarkets.includes(config.country);
      return state.overlays.filter((o) => {
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

    private render(): void {
      const state = this.client?.state;
      if (!state) return;
      if (state.config) this.style.setProperty('--svc-primary', state.config.theme.primaryColor);
      const shown = this.visible(state);
      const ids = new Set(shown.map((o) => o.id));
      for (const [id, card] of this.cards) {
        if (!ids.has(id)) {
          this.observer?.unobserve(card);
          card.remove();
          this.cards.delete(id);
          this.drawn.delete(id);
          clearTimeout(this.viewTimers.get(id));
          this.viewTimers.delete(id);
        }
      }
      for (const overlay of shown) {
        const existing = this.cards.get(overlay.id);
        const signature = JSON.stringify([overlay.updatedAt, state.results.get(overlay.id), state.votes.get(overlay.id), state.contests.has(overlay.id), this.language]);
        if (existing && this.drawn.get(overlay.id) === signature) continue;
        this.drawn.set(overlay.id, signature);
        const card = this.renderCard(overlay, state);
        if (existing) {
          // Keep focus where it was when a card is redrawn.
          const focused = this.root.activeElement?.getAttribute('data-key');
          existing.replaceWith(card);
          this.observer?.unobserve(existing);
          if (focused) (card.querySelector(`[data-key="${focused}"]`) as HTMLElement | null)?.focus();
        } else {
          this.layerFor(overlay).append(card);
        }
        this.cards.set(overlay.id, card);
        this.observer?.observe(card);
      }
      this.renderCart(shown.some((o) => o.type === 'product'));
    }

    private layerFor(overlay: Overlay): Element_ {
      if (overlay.type === 'lineup') return this.layers.side;
      if (overlay.type === 'product') return overlay.placement === 'banner' ? this.root.appendChild(el('div')) : this.layers.shelf;
      return this.layers.stack;
    }

    private renderCard(overlay: Overlay, state: OverlayState): Element_ {
      const s = this.strings;
      const card = el('section', { class: 'card', 'data-overlay': overlay.id, 'data-type': overlay.type });
      switch (overlay.type) {
        case 'poll': {
          card.setAttribute('aria-label', overlay.question);
          card.append(el('h3', {}, overlay.question));
          const mine = state.votes.get(overlay.id);
          if (mine === undefined) {
            const options = el('div', { class: 'options', role: 'group' });
            overlay.options.forEach((option, index) => {
              const button = el('button', { type: 'button', 'data-key': `opt-${index}` }, option);
              button.addEventListener('click', () => void this.client?.vote(overlay.id, index).catch(() => undefined));
              options.append(button);
            });
            card.append(options);
          } else {
            card.append(this.results(overlay.options, state.results.get(overlay.id), mine), el('p', { class: 'muted' }, s.voted));
            // Redrawn only when the results change: tell screen readers, politely.
            this.announce(overlay.id);
          }
          break;
        }
        case 'contest': {
          card.append(el('div', { class: 'label' }, overlay.title), el('h3', {}, overlay.title));
          if (overlay.description) card.append(el('p', {}, overlay.description));
          if (state.contests.has(overlay.id)) card.append(el('p', { role: 'status' }, s.entered));
          else {
            const button = el('button', { type: 'button', 'data-key': 'enter' }, s.enter);
            button.addEventListener('click', () => void this.client?.enterContest(overlay.id));
            card.append(button);
          }
          break;
        }
        case 'lineup': {
          card.append(el('h3', {}, s.lineup));
          const list = el('ol');
          for (const item of overlay.items) {
            const time = item.at ? new Date(item.at).toLocaleTimeString(this.language, { hour: '2-digit', minute: '2-digit' }) : '';
            list.append(el('li', {}, time ? `${time} · ${item.title}` : item.title));
          }
          card.append(list);
          break;
        }
        case 'sponsor_moment': {
          card.classList.add('moment');
          card.append(el('div', { class: 'label' }, s.sponsoredBy));
          if (overlay.imageUrl) card.append(el('img', { src: overlay.imageUrl, alt: '' }));
          card.append(el('p', {}, overlay.message));
          if (overlay.ctaUrl) {
            const link = el('a', { class: 'cta', href: overlay.ctaUrl, target: '_blank', rel: 'noopener', 'data-key': 'cta' }, s.learnMore);
            link.addEventListener('click', () => this.client?.track('sponsor_moment.tapped', { data: { momentId: overlay.id, sponsorId: overlay.sponsorId } }));
            card.append(link);
          }
          break;
        }
        case 'product': {
          card.classList.add(overlay.placement === 'banner' ? 'banner' : 'product');
          const productId = productIdOf(overlay);
          const commerce = { sponsorId: overlay.sponsorId ?? null, orderId: null, items: [], total: 0 };
          if (overlay.imageUrl) card.append(el('img', { src: overlay.imageUrl, alt: '' }));
          const name = el('button', { type: 'button', class: 'name', 'data-key': 'name' }, overlay.name);
          name.addEventListener('click', () => this.client?.track('product.tapped', { ...commerce, data: { productId } }));
          const add = el('button', { type: 'button', 'data-key': 'add' }, s.addToCart);
          add.addEventListener('click', () => this.addToCart({ productId, name: overlay.name, quantity: 1, unitPrice: overlay.price, currency: overlay.currency, sponsorId: overlay.sponsorId ?? null }));
          card.append(name, el('div', { class: 'price' }, money(overlay.price, overlay.currency, this.language)), add);
          break;
        }
      }
      return card;
    }

    private results(options: string[], results: PollResults | undefined, mine: number): Element_ {
      const box = el('div');
      const total = results?.total ?? 0;
      options.forEach((option, index) => {
        const count = results?.counts[index] ?? 0;
        const share = total ? Math.round((count / total) * 100) : 0;
        const bar = el('div', { class: index === mine ? 'bar mine' : 'bar' });
        const fill = el('span');
        fill.style.width = `${share}%`;
        const row = el('div');
        row.append(el('span', {}, option), el('span', {}, `${share}%`));
        bar.append(fill, row);
        box.append(bar);
      });
      box.append(el('div', { class: 'muted' }, this.strings.votes(total)));
      return box;
    }

    private announce(pollId: string): void {
      const state = this.client?.state;
      const poll = state?.overlays.find((o) => o.id === pollId);
      const results = state?.results.get(pollId);
      if (!poll || poll.type !== 'poll') return;
      const parts = poll.options.map((option, i) => `${option}: ${results?.counts[i] ?? 0}`);
      this.live.textContent = `${this.strings.voted}. ${parts.join(', ')}`;
    }

    private cartTotal(): number {
      return Math.round(this.cart.reduce((sum, line) => sum + line.quantity * line.unitPrice, 0) * 100) / 100;
    }

    private cartFields(orderId: string | null = null) {
      return {
        orderId,
        sponsorId: this.cart[0]?.sponsorId ?? null,
        items: this.cart.map(({ productId, name, quantity, unitPrice, currency }) => ({ productId, name, quantity, unitPrice, currency })),
        total: this.cartTotal(),
      };
    }

    private addToCart(line: CartLine): void {
      const existing = this.cart.find((l) => l.productId === line.productId);
      if (existing) existing.quantity++;
      else this.cart.push(line);
      this.client?.track('cart.item_added', { ...this.cartFields(), sponsorId: line.sponsorId, data: { productId: line.productId, quantity: 1 } });
      this.render();
    }

    private removeFromCart(productId: string): void {
      const index = this.cart.findIndex((l) => l.productId === productId);
      if (index < 0) return;
      const [line] = this.cart.splice(index, 1);
      this.client?.track('cart.item_removed', { ...this.cartFields(), sponsorId: line!.sponsorId, data: { productId, quantity: line!.quantity } });
      this.renderPanel('cart');
      this.render();
    }

    private renderCart(commerceShown: boolean): void {
      const count = this.cart.reduce((n, l) => n + l.quantity, 0);
      if (!commerceShown && !count) {
        this.cartButton?.remove();
        this.cartButton = null;
        return;
      }
      if (!this.cartButton) {
        this.cartButton = el('button', { type: 'button', class: 'cart', 'data-key': 'cart' });
        this.cartButton.addEventListener('click', () => this.renderPanel(this.panel ? null : 'cart'));
        this.root.append(this.cartButton);
      }
      this.cartButton.textContent = this.strings.cart(count);
    }

    private renderPanel(view: 'cart' | 'checkout' | 'done' | null): void {
      this.panel?.remove();
      this.panel = null;
      if (!view) return;
      const s = this.strings;
      const panel = el('section', { class: 'card panel', role: 'dialog', 'aria-label': s.cart(this.cart.length) });
      const currency = this.cart[0]?.currency ?? 'EUR';
      if (view === 'done') {
        panel.append(el('p', { role: 'status' }, s.thanks));
      } else {
        for (const line of this.cart) {
          const row = el('div', { class: 'row' });
          row.append(el('span', {}, `${line.quantity} × ${line.name}`), el('span', {}, money(line.quantity * line.unitPrice, line.currency, this.language)));
          if (view === 'cart') {
            const remove = el('button', { type: 'button', class: 'secondary', 'data-key': `rm-${line.productId}` }, s.remove);
            remove.addEventListener('click', () => this.removeFromCart(line.productId));
            row.append(remove);
          }
          panel.append(row);
        }
        panel.append(el('div', { class: 'row price' }, money(this.cartTotal(), currency, this.language)));
        const actions = el('div', { class: 'actions' });
        const cancel = el('button', { type: 'button', class: 'secondary', 'data-key': 'cancel' }, view === 'cart' ? s.close : s.cancel);
        cancel.addEventListener('click', () => {
          if (view === 'checkout') this.client?.track('checkout.abandoned', { ...this.cartFields(), data: { step: 'cart' } });
          this.renderPanel(null);
        });
        const go = el('button', { type: 'button', 'data-key': view === 'cart' ? 'checkout' : 'order' }, view === 'cart' ? s.checkout : s.placeOrder);
        go.disabled = this.cart.length === 0;
        go.addEventListener('click', () => {
          if (view === 'cart') {
            this.client?.track('checkout.started', { ...this.cartFields(), data: {} });
            this.renderPanel('checkout');
          } else {
            this.client?.track('checkout.completed', { ...this.cartFields(`ord_${ulid()}`), data: { currency } });
            this.cart.splice(0);
            this.renderPanel('done');
            this.render();
          }
        });
        actions.append(cancel, go);
        panel.append(actions);
      }
      this.panel = panel;
      this.root.append(panel);
      (panel.querySelector('button') as HTMLButtonElement | null)?.focus();
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
              const overlay = this.client?.state.overlays.find((o) => o.id === overlayId);
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

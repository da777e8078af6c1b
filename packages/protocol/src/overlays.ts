import { CURRENCY_PATTERN, ID_MAX_LENGTH } from './ids';

/** Overlay types the gateway pushes to viewers. */
export const OVERLAY_TYPES = ['poll', 'contest', 'lineup', 'sponsor_moment', 'product'] as const;
export type OverlayType = (typeof OVERLAY_TYPES)[number];

export const POLL_MIN_OPTIONS = 2;
export const POLL_MAX_OPTIONS = 6;

export interface PollContent {
  type: 'poll';
  question: string;
  options: string[];
  /** ISO 8601 time after which votes are refused; none: open while shown. */
  closesAt?: string;
}
export interface ContestContent {
  type: 'contest';
  title: string;
  description?: string;
  /** ISO 8601 time after which entries are refused; none: open while shown. */
  closesAt?: string;
}
export interface LineupContent {
  type: 'lineup';
  items: Array<{ title: string; at?: string }>;
}
export interface SponsorMomentContent {
  type: 'sponsor_moment';
  sponsorId: string;
  message: string;
  imageUrl?: string;
  ctaUrl?: string;
  durationMs?: number;
}
export interface ProductContent {
  type: 'product';
  name: string;
  price: number;
  currency: string;
  placement: 'carousel' | 'banner';
  sponsorId?: string;
  productId?: string;
  imageUrl?: string;
  url?: string;
}

export type OverlayContent = PollContent | ContestContent | LineupContent | SponsorMomentContent | ProductContent;

/** The sponsor of a sponsor moment or product, from the sponsor record when the overlay is read or pushed. */
export interface OverlaySponsor {
  id: string;
  name: string;
  logoUrl?: string;
}

/** An overlay as the admin API and the gateway show it. */
export type Overlay = OverlayContent & {
  id: string;
  broadcastId: string;
  active: boolean;
  createdAt: string;
  updatedAt: string;
  /** Server time the overlay was last shown (null: never), so a player behind the live edge can show it in step. */
  shownAt: string | null;
  /** Of a `sponsor_moment` or `product` with a `sponsorId` the tenant has. */
  sponsor?: OverlaySponsor;
};

const text = (max: number) => ({ type: 'string', minLength: 1, maxLength: max }) as const;
const dateTime = { type: 'string', format: 'date-time' } as const;
const url = { type: 'string', maxLength: 2_000, pattern: '^https?://[^\\s]+$' } as const;
const id = { type: 'string', minLength: 1, maxLength: ID_MAX_LENGTH, pattern: '^[^\\u0000-\\u001f\\u007f]+$' } as const;

/** JSON Schemas of the overlay bodies of `POST /v1/broadcasts/:id/overlays`, by type. */
export const OVERLAY_SCHEMAS: Record<OverlayType, Record<string, unknown>> = {
  poll: {
    type: 'object',
    additionalProperties: false,
    required: ['type', 'question', 'options'],
    properties: {
      type: { const: 'poll' },
      question: text(300),
      options: { type: 'array', minItems: POLL_MIN_OPTIONS, maxItems: POLL_MAX_OPTIONS, uniqueItems: true, items: text(120) },
      closesAt: dateTime,
    },
  },
  contest: {
    type: 'object',
    additionalProperties: false,
    required: ['type', 'title'],
    properties: { type: { const: 'contest' }, title: text(200), description: text(2_000), closesAt: dateTime },
  },
  lineup: {
    type: 'object',
    additionalProperties: false,
    required: ['type', 'items'],
    properties: {
      type: { const: 'lineup' },
      items: {
        type: 'array',
        minItems: 1,
        maxItems: 50,
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['title'],
          properties: { title: text(200), at: { type: 'string', format: 'date-time' } },
        },
      },
    },
  },
  sponsor_moment: {
    type: 'object',
    additionalProperties: false,
    required: ['type', 'sponsorId', 'message'],
    properties: {
      type: { const: 'sponsor_moment' },
      sponsorId: id,
      message: text(500),
      imageUrl: url,
      ctaUrl: url,
      durationMs: { type: 'integer', minimum: 1_000, maximum: 600_000 },
    },
  },
  product: {
    type: 'object',
    additionalProperties: false,
    required: ['type', 'name', 'price', 'currency', 'placement'],
    properties: {
      type: { const: 'product' },
      name: text(200),
      price: { type: 'number', minimum: 0, maximum: 1e9 },
      currency: { type: 'string', pattern: CURRENCY_PATTERN },
      placement: { type: 'string', enum: ['carousel', 'banner'] },
      sponsorId: id,
      productId: id,
      imageUrl: url,
      url,
    },
  },
};

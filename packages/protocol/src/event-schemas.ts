import { EVENT_NAMES, isCommerceEvent, type EventName } from './event-names';
import { COUNTRY_PATTERN, CURRENCY_PATTERN, ID_MAX_LENGTH, SESSION_ID_PATTERN, USER_ID_MAX_LENGTH, UUID_PATTERN } from './ids';

/**
 * JSON Schemas (draft-07) of every event. Plain data, so the server validates with them, the
 * OpenAPI document shows them, and the SDK can import the types without a validator.
 * `data` objects accept extra properties (custom context); every string in them still passes
 * the privacy guard.
 */
type JsonSchema = Record<string, unknown>;

/** Identifiers are printable: control characters would corrupt exports and logs. */
const PRINTABLE = '^[^\\u0000-\\u001f\\u007f]+$';
const id = { type: 'string', minLength: 1, maxLength: ID_MAX_LENGTH, pattern: PRINTABLE } as const;
const text = { type: 'string', minLength: 1, maxLength: 1_000 } as const;
const nullableId = { type: ['string', 'null'], minLength: 1, maxLength: ID_MAX_LENGTH, pattern: PRINTABLE } as const;

function dataObject(properties: Record<string, JsonSchema>, required: string[] = Object.keys(properties)): JsonSchema {
  return { type: 'object', properties, required };
}

export const EVENT_DATA_SCHEMAS: Record<EventName, JsonSchema> = {
  'broadcast.joined': dataObject({}),
  'broadcast.left': dataObject({
    reason: { type: 'string', enum: ['closed', 'timeout', 'disconnect'] },
    watchedMs: { type: 'integer', minimum: 0 },
  }),
  'poll.viewed': dataObject({ pollId: id, questionText: text }),
  'poll.voted': dataObject({
    pollId: id,
    questionText: text,
    optionSelected: text,
    optionIndex: { type: 'integer', minimum: 0, maximum: 99 },
  }),
  'contest.viewed': dataObject({ contestId: id, title: text }),
  'contest.entered': dataObject({ contestId: id, title: text }),
  'lineup.viewed': dataObject({ lineupId: id }),
  'sponsor_moment.viewed': dataObject({ momentId: id, sponsorId: id }),
  'sponsor_moment.tapped': dataObject({ momentId: id, sponsorId: id }),
  'product.viewed': dataObject({ productId: id, placement: { type: 'string', enum: ['carousel', 'banner'] } }),
  'product.tapped': dataObject({ productId: id }),
  'cart.item_added': dataObject({ productId: id, quantity: { type: 'integer', minimum: 1, maximum: 10_000 } }),
  'cart.item_removed': dataObject({ productId: id, quantity: { type: 'integer', minimum: 1, maximum: 10_000 } }),
  'checkout.started': dataObject({}),
  'checkout.completed': dataObject({ currency: { type: 'string', pattern: CURRENCY_PATTERN } }),
  'checkout.abandoned': dataObject({ step: { type: 'string', enum: ['cart', 'details', 'payment'] } }, []),
};

export const LINE_ITEM_SCHEMA: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['productId', 'quantity', 'unitPrice', 'currency'],
  properties: {
    productId: id,
    name: text,
    quantity: { type: 'integer', minimum: 1, maximum: 10_000 },
    unitPrice: { type: 'number', minimum: 0, maximum: 1e9 },
    currency: { type: 'string', pattern: CURRENCY_PATTERN },
  },
};

const COMMON_PROPERTIES: Record<string, JsonSchema> = {
  eventId: { type: 'string', pattern: UUID_PATTERN },
  userId: { type: ['string', 'null'], minLength: 1, maxLength: USER_ID_MAX_LENGTH, pattern: PRINTABLE },
  sessionId: { type: 'string', pattern: SESSION_ID_PATTERN },
  broadcastId: id,
  campaignId: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
  timestamp: { type: 'string', format: 'date-time', maxLength: 40 },
  country: { type: ['string', 'null'], pattern: COUNTRY_PATTERN },
};

const COMMERCE_PROPERTIES: Record<string, JsonSchema> = {
  orderId: nullableId,
  sponsorId: nullableId,
  items: { type: 'array', maxItems: 200, items: LINE_ITEM_SCHEMA },
  total: { type: 'number', minimum: 0, maximum: 1e12 },
};

/** Full schema of one event type, envelope included. */
export function eventSchema(name: EventName): JsonSchema {
  const commerce = isCommerceEvent(name);
  const required = ['event', 'sessionId', 'broadcastId', 'timestamp', 'data'];
  // A confirmed purchase without its order, lines and total would make revenue wrong.
  if (name === 'checkout.completed') required.push('orderId', 'items', 'total');
  const properties: Record<string, JsonSchema> = {
    event: { const: name },
    ...COMMON_PROPERTIES,
    ...(commerce ? COMMERCE_PROPERTIES : {}),
    data: EVENT_DATA_SCHEMAS[name],
  };
  if (name === 'checkout.completed') properties.orderId = id;
  return { type: 'object', additionalProperties: false, required, properties };
}

/** Schema of any event, for documentation. */
export function anyEventSchema(): JsonSchema {
  return { oneOf: EVENT_NAMES.map((name) => eventSchema(name)) };
}

/** Every property name the event schemas declare, at any level (the event's fields, its data's, its line items'). */
export function eventFieldNames(): Set<string> {
  const names = new Set<string>();
  const collect = (schema: unknown): void => {
    if (Array.isArray(schema)) return schema.forEach(collect);
    if (schema === null || typeof schema !== 'object') return;
    const properties = (schema as { properties?: Record<string, unknown> }).properties;
    if (properties && typeof properties === 'object') for (const name of Object.keys(properties)) names.add(name);
    Object.values(schema).forEach(collect);
  };
  for (const name of EVENT_NAMES) collect(eventSchema(name));
  return names;
}

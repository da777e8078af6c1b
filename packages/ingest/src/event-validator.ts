import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { EVENT_NAMES, eventSchema, findPii, isEventName, redactPointer, type ErrorCode, type EventName, type FieldError } from '@svc/protocol';

export type ValidationOutcome =
  | { ok: true; event: EventName }
  | { ok: false; code: ErrorCode; detail: string; errors: FieldError[] };

/**
 * Structural and privacy checks of one event, compiled once per event type. The first error
 * decides the event's rejection code; every error is listed with its JSON Pointer path.
 */
export class EventValidator {
  private readonly validators = new Map<EventName, ValidateFunction>();

  constructor() {
    const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
    addFormats.default(ajv, ['date-time']);
    for (const name of EVENT_NAMES) this.validators.set(name, ajv.compile(eventSchema(name)));
  }

  validate(raw: unknown): ValidationOutcome {
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
      return reject('invalid_type', 'An event must be a JSON object.', [{ path: '', code: 'invalid_type', message: 'must be object' }]);
    }
    const name = (raw as { event?: unknown }).event;
    if (name === undefined) {
      return reject('missing_field', 'The event has no "event" name.', [{ path: '/event', code: 'missing_field', message: 'is required' }]);
    }
    if (!isEventName(name)) {
      const shown = typeof name === 'string' ? `"${name.slice(0, 64)}"` : `a ${typeof name}`;
      return reject('unknown_event', `${shown} is not one of the 16 event names.`, [
        { path: '/event', code: 'unknown_event', message: 'must be a known event name' },
      ]);
    }
    // Personal data is looked for first: such an event is refused for that reason above all.
    const event = raw as { userId?: unknown; data?: unknown; items?: unknown; orderId?: unknown; sponsorId?: unknown };
    const findings = [
      ...findPii(event.userId, '/userId'),
      ...findPii(event.data, '/data'),
      ...findPii(event.items, '/items'),
      ...findPii(event.orderId, '/orderId'),
      ...findPii(event.sponsorId, '/sponsorId'),
    ];
    if (findings.length) {
      // Paths are redacted too: a key can itself be the personal datum.
      return reject(
        'pii_detected',
        `Personal data is not accepted: ${findings.map((f) => `${redactPointer(f.path)} looks like ${f.kind.replace('_', ' ')}`).join('; ')}.`,
        findings.map((f) => ({ path: redactPointer(f.path), code: 'pii_detected', message: `looks like ${f.kind.replace('_', ' ')}` })),
      );
    }
    const validate = this.validators.get(name)!;
    if (!validate(raw)) {
      const errors = (validate.errors ?? []).map(toFieldError).map((e) => ({ ...e, path: redactPointer(e.path) }));
      const first = errors[0]!;
      return reject(first.code as ErrorCode, `${first.path || 'event'} ${first.message}`, errors);
    }
    return { ok: true, event: name };
  }
}

function reject(code: ErrorCode, detail: string, errors: FieldError[]): ValidationOutcome {
  return { ok: false, code, detail, errors };
}

function toFieldError(error: ErrorObject): FieldError {
  switch (error.keyword) {
    case 'required': {
      const missing = (error.params as { missingProperty: string }).missingProperty;
      return { path: `${error.instancePath}/${missing}`, code: 'missing_field', message: 'is required' };
    }
    case 'additionalProperties': {
      const extra = (error.params as { additionalProperty: string }).additionalProperty;
      return { path: `${error.instancePath}/${extra}`, code: 'unknown_field', message: 'is not a known field' };
    }
    case 'type':
      return { path: error.instancePath, code: 'invalid_type', message: error.message ?? 'has the wrong type' };
    default:
      return { path: error.instancePath, code: 'invalid_value', message: error.message ?? 'is invalid' };
  }
}

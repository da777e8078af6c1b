import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { cleanKeysOf, EVENT_NAMES, eventFieldNames, eventSchema, findPii, isEventName, MAX_EVENT_DEPTH, redactPointer, type ErrorCode, type EventName, type FieldError } from '@svc/protocol';
import { dateTimeFormat } from './date-time-format';

export type ValidationOutcome =
  | { ok: true; event: EventName }
  | { ok: false; code: ErrorCode; detail: string; errors: FieldError[] };

/**
 * Structural and privacy checks of one event, compiled once per event type. The first error
 * decides the event's rejection code; every error is listed with its JSON Pointer path.
 */
export class EventValidator {
  private readonly validators = new Map<EventName, ValidateFunction>();
  /** The schemas' field names: the privacy guard need not look for personal data in them. */
  private readonly fieldNames = cleanKeysOf(eventFieldNames());

  constructor() {
    const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
    ajv.addFormat('date-time', dateTimeFormat);
    for (const name of EVENT_NAMES) this.validators.set(name, ajv.compile(eventSchema(name)));
  }

  validate(raw: unknown): ValidationOutcome {
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
      return reject('invalid_type', 'An event must be a JSON object.', [{ path: '', code: 'invalid_type', message: 'must be object' }]);
    }
    // Personal data is looked for first, in every key and string of the event at every level,
    // the name included: such an event is refused for that reason above all, and no detail
    // below can echo personal data.
    const findings = findPii(raw, '', this.fieldNames);
    const personal = findings.filter((f) => f.kind !== 'too_deep');
    if (personal.length) {
      // Paths are redacted too: a key can itself be the personal datum.
      return reject(
        'pii_detected',
        `Personal data is not accepted: ${personal.map((f) => `${redactPointer(f.path)} looks like ${f.kind.replace('_', ' ')}`).join('; ')}.`,
        personal.map((f) => ({ path: redactPointer(f.path), code: 'pii_detected', message: `looks like ${f.kind.replace('_', ' ')}` })),
      );
    }
    if (findings.length) {
      // The guard did not read below this depth, so nothing from there may be stored.
      const detail = `The event nests objects and arrays deeper than ${MAX_EVENT_DEPTH} levels.`;
      return reject('validation_failed', detail, findings.slice(0, 10).map((f) => ({ path: redactPointer(f.path), code: 'invalid_value', message: `nests deeper than ${MAX_EVENT_DEPTH} levels` })));
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

import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { OVERLAY_SCHEMAS, OVERLAY_TYPES, SvcError, type FieldError, type OverlayContent, type OverlayType } from '@svc/protocol';

/** Checks an overlay body against the schema of its type; errors name each bad field. */
export class OverlayValidator {
  private readonly validators = new Map<OverlayType, ValidateFunction>();

  constructor() {
    const ajv = new Ajv({ allErrors: true, strict: true });
    addFormats.default(ajv, ['date-time']);
    for (const type of OVERLAY_TYPES) this.validators.set(type, ajv.compile(OVERLAY_SCHEMAS[type]));
  }

  validate(body: unknown): OverlayContent {
    const type = (body as { type?: unknown } | null)?.type;
    if (typeof type !== 'string' || !(OVERLAY_TYPES as readonly string[]).includes(type)) {
      throw new SvcError('validation_failed', `"type" must be one of ${OVERLAY_TYPES.join(', ')}.`, {
        errors: [{ path: '/type', code: type === undefined ? 'missing_field' : 'invalid_value', message: `must be one of ${OVERLAY_TYPES.join(', ')}` }],
      });
    }
    const validate = this.validators.get(type as OverlayType)!;
    if (!validate(body)) {
      const errors = (validate.errors ?? []).map(toFieldError);
      throw new SvcError('validation_failed', `${errors[0]!.path} ${errors[0]!.message}`, { errors });
    }
    return body as OverlayContent;
  }
}

function toFieldError(error: ErrorObject): FieldError {
  const params = error.params as { missingProperty?: string; additionalProperty?: string };
  if (params.missingProperty) return { path: `${error.instancePath}/${params.missingProperty}`, code: 'missing_field', message: 'is required' };
  if (params.additionalProperty) return { path: `${error.instancePath}/${params.additionalProperty}`, code: 'unknown_field', message: 'is not a known field' };
  return { path: error.instancePath, code: error.keyword === 'type' ? 'invalid_type' : 'invalid_value', message: error.message ?? 'is invalid' };
}

import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

export interface OpenApiOperation {
  operationId: string;
  security?: Array<Record<string, string[]>>;
  parameters?: Array<{ in: 'path' | 'query' | 'header'; name: string; required?: boolean; schema: Record<string, unknown> }>;
  requestBody?: { required?: boolean; content: Record<string, { schema: object }> };
  responses: Record<string, { content?: Record<string, { schema: object }>; headers?: Record<string, unknown> }>;
}

export interface OpenApiDocument {
  paths: Record<string, Record<string, OpenApiOperation>>;
  components: Record<string, unknown>;
}

export interface Located {
  /** The path template, e.g. `/v1/webhooks/{id}`. */
  path: string;
  /** Lower case, as in the document. */
  method: string;
  /** Undefined when the path is documented but not this method. */
  operation: OpenApiOperation | undefined;
}

export interface Answer {
  status: number;
  headers: Record<string, unknown>;
  body: string;
}

const DOC_ID = 'urn:svc:openapi';
const JSON_TYPES = new Set(['application/json', 'application/problem+json']);

/** Bare media type of a Content-Type header (`text/csv; header=present` → `text/csv`). */
export function mediaType(contentType: unknown): string {
  return String(contentType ?? '').split(';')[0]!.trim().toLowerCase();
}

/**
 * Checks answers against the OpenAPI document: the status is one the operation lists, the
 * content type one that status lists (none when it lists none), and a JSON body matches the
 * schema of that status and type (JSON Schema 2020-12, the dialect of OpenAPI 3.1).
 */
export class ContractChecker {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  private readonly validators = new Map<object, ValidateFunction>();
  private readonly templates: Array<{ path: string; segments: string[] }>;

  constructor(readonly doc: OpenApiDocument) {
    addFormats.default(this.ajv);
    this.ajv.addSchema({ $id: DOC_ID, components: doc.components });
    this.templates = Object.keys(doc.paths).map((path) => ({ path, segments: path.split('/') }));
  }

  /**
   * The documented path a request URL is for, or null when it is for none (another route, or
   * a path with dot or empty segments that the router would not take as that path).
   */
  locate(method: string, url: string): Located | null {
    const segments = url.split('?')[0]!.split('/');
    if (segments.slice(1).some((s) => s === '' || s === '.' || s === '..')) return null;
    const match = this.templates.find(
      (t) => t.segments.length === segments.length && t.segments.every((s, i) => (s.startsWith('{') ? true : s === segments[i])),
    );
    if (!match) return null;
    return { path: match.path, method: method.toLowerCase(), operation: this.doc.paths[match.path]![method.toLowerCase()] };
  }

  /** What in the answer departs from the document, in words; empty when nothing does. */
  violations(operation: OpenApiOperation, answer: Answer): string[] {
    const response = operation.responses[String(answer.status)];
    if (!response) return [`status ${answer.status} is not listed (${Object.keys(operation.responses).join(', ')})`];
    const type = mediaType(answer.headers['content-type']);
    if (!response.content) return answer.body.length ? [`status ${answer.status} has no content in the document, but a ${type} body came`] : [];
    const media = response.content[type];
    if (!media) return [`content type "${type}" is not listed for ${answer.status} (${Object.keys(response.content).join(', ')})`];
    if (!JSON_TYPES.has(type)) return this.textViolations(type, answer.body);
    let body: unknown;
    try {
      body = JSON.parse(answer.body);
    } catch {
      return [`the ${type} body is not JSON: ${answer.body.slice(0, 80)}`];
    }
    const validate = this.validatorFor(media.schema);
    if (validate(body)) return [];
    return (validate.errors ?? []).slice(0, 3).map((e) => `body${e.instancePath} ${e.message} (${JSON.stringify(e.params)})`);
  }

  /** Whether a request body conforms to the operation's request body schema for its media type. */
  requestViolations(operation: OpenApiOperation, contentType: string, body: unknown): string[] {
    const media = operation.requestBody?.content[contentType];
    if (!media) return [`the operation takes no ${contentType} body`];
    const validate = this.validatorFor(media.schema);
    return validate(body) ? [] : (validate.errors ?? []).slice(0, 3).map((e) => `request body${e.instancePath} ${e.message}`);
  }

  private textViolations(type: string, body: string): string[] {
    if (type === 'application/x-ndjson') {
      const bad = body.split('\n').filter((line) => line && !isJsonObject(line));
      return bad.length ? [`${bad.length} NDJSON lines are not JSON objects`] : [];
    }
    return [];
  }

  private validatorFor(schema: object): ValidateFunction {
    let validate = this.validators.get(schema);
    if (!validate) {
      // References into the document's components resolve against the document itself.
      const rebased = JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', `"${DOC_ID}#/components/`)) as object;
      validate = this.ajv.compile(rebased);
      this.validators.set(schema, validate);
    }
    return validate;
  }
}

function isJsonObject(line: string): boolean {
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'object' && value !== null && !Array.isArray(value);
  } catch {
    return false;
  }
}

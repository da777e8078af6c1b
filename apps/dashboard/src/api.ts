/** A problem+json answer, thrown by every call that fails. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** Per-field problems of a 400 (`errors[]` of the problem+json), each with its JSON pointer. */
    readonly errors: ReadonlyArray<{ path: string; code?: string; message: string }> = [],
  ) {
    super(message);
  }
}

/** Same-origin JSON calls; the session cookie carries the login. */
export async function api<T>(path: string, init: RequestInit = {}): Promise<T> {
  const response = await fetch(path, {
    credentials: 'same-origin',
    ...init,
    headers: { ...(init.body ? { 'content-type': 'application/json' } : {}), ...(init.headers ?? {}) },
  });
  if (response.status === 204) return undefined as T;
  const body = (await response.json().catch(() => ({}))) as { code?: string; detail?: string; errors?: ApiError['errors'] };
  if (!response.ok) throw new ApiError(response.status, body.code ?? 'error', body.detail ?? `HTTP ${response.status}`, Array.isArray(body.errors) ? body.errors : []);
  return body as T;
}

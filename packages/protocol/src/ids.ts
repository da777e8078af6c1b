/** Public API key: `svc_pk_` + 32 base62 characters. Ships inside apps. */
export const API_KEY_PATTERN = /^svc_pk_[0-9A-Za-z]{32}$/;
/** Secret admin token: `svc_sk_` + 32 base62 characters. Stored only as a SHA-256 hash. */
export const ADMIN_TOKEN_PATTERN = /^svc_sk_[0-9A-Za-z]{32}$/;
/** Session id: `svc_` + an opaque URL-safe part (the SDK uses a ULID). */
export const SESSION_ID_PATTERN = '^svc_[0-9A-Za-z_-]{1,64}$';
/** Any RFC 9562 UUID in canonical form; the SDK sends UUIDv7. */
export const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
/** ISO 3166-1 alpha-2, uppercase. */
export const COUNTRY_PATTERN = '^[A-Z]{2}$';
/** ISO 4217 currency code, uppercase. */
export const CURRENCY_PATTERN = '^[A-Z]{3}$';
export const USER_ID_MAX_LENGTH = 128;
export const ID_MAX_LENGTH = 128;
/**
 * The longest a valid id can be as one percent-encoded URL path segment: every character
 * (code point) at most 4 UTF-8 bytes, every byte at most 3 characters (`%F0`). The HTTP
 * router's segment limit, so that every id the API accepts can also be named in a URL.
 */
export const ID_MAX_URL_SEGMENT_LENGTH = Math.max(ID_MAX_LENGTH, USER_ID_MAX_LENGTH) * 4 * 3;

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * Base62 string of `length` characters from `randomBytes`, without modulo bias
 * (bytes >= 248 are drawn again). `randomBytes` is injected so this stays free of I/O.
 */
export function randomBase62(length: number, randomBytes: (size: number) => Uint8Array): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += BASE62[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

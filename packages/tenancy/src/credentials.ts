import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { ADMIN_TOKEN_PATTERN, API_KEY_PATTERN, randomBase62 } from '@svc/protocol';

export type RandomBytes = (size: number) => Uint8Array;

export const API_KEY_PREFIX = 'svc_pk_';
export const ADMIN_TOKEN_PREFIX = 'svc_sk_';
const CREDENTIAL_BODY_LENGTH = 32;
/** How much of an admin token lists show, enough to tell tokens apart. */
const TOKEN_DISPLAY_PREFIX_LENGTH = 11;

export function newApiKey(random: RandomBytes = randomBytes): string {
  return API_KEY_PREFIX + randomBase62(CREDENTIAL_BODY_LENGTH, random);
}

export function newAdminToken(random: RandomBytes = randomBytes): string {
  return ADMIN_TOKEN_PREFIX + randomBase62(CREDENTIAL_BODY_LENGTH, random);
}

/** Record id such as `ak_3xY…` for a key or `at_…` for a token; safe to show and log. */
export function newRecordId(prefix: string, random: RandomBytes = randomBytes): string {
  return `${prefix}_${randomBase62(16, random)}`;
}

export function isApiKey(value: string): boolean {
  return API_KEY_PATTERN.test(value);
}

export function isAdminToken(value: string): boolean {
  return ADMIN_TOKEN_PATTERN.test(value);
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

export function tokenDisplayPrefix(token: string): string {
  return token.slice(0, TOKEN_DISPLAY_PREFIX_LENGTH);
}

/** Constant-time comparison of two hex SHA-256 digests. */
export function sameHash(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && timingSafeEqual(left, right);
}

/** A commerce credential delivered to the SDK at run time. */
export function newCommerceApiKey(random: RandomBytes = randomBytes): string {
  return `ck_${randomBase62(32, random)}`;
}

import { createHmac, randomBytes } from 'node:crypto';

/** Standard Webhooks secret prefix; the rest is base64 of the key bytes. */
export const SECRET_PREFIX = 'whsec_';
const SECRET_BYTES = 32;

export function newWebhookSecret(random: (size: number) => Uint8Array = randomBytes): string {
  return SECRET_PREFIX + Buffer.from(random(SECRET_BYTES)).toString('base64');
}

/** `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` with one secret. */
export function signature(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`;
}

/** The `webhook-signature` header: one signature per live secret, space-separated (key rotation). */
export function signatureHeader(secrets: string[], id: string, timestampSeconds: number, body: string): string {
  return secrets.map((secret) => signature(secret, id, timestampSeconds, body)).join(' ');
}

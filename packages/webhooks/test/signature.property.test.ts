import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { newWebhookSecret, signatureHeader, SECRET_PREFIX } from '../src/signature';

const secretArb = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((bytes) => newWebhookSecret(() => bytes));
// Ids as the dispatcher sends them (event ids) and any other printable header value.
const idArb = fc.oneof(fc.uuid(), fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 40 }).filter((s) => s.trim() === s && s.length > 0));
const bodyArb = fc.jsonValue({ maxDepth: 4 }).map((value) => JSON.stringify(value));
/** Within the receiver's 5-minute tolerance of now. */
const nowSeconds = () => Math.floor(Date.now() / 1000);
const timestampArb = fc.integer({ min: -240, max: 240 });

function headers(id: string, timestamp: number, signature: string) {
  return { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signature };
}

describe('webhook signatures (properties)', () => {
  it('generates secrets in the Standard Webhooks format', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), (bytes) => {
        const secret = newWebhookSecret(() => bytes);
        expect(secret.startsWith(SECRET_PREFIX)).toBe(true);
        expect(Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64')).toEqual(Buffer.from(bytes));
      }),
    );
  });

  it('produces signatures that the standardwebhooks library verifies', () => {
    fc.assert(
      fc.property(secretArb, idArb, timestampArb, bodyArb, (secret, id, offset, body) => {
        const timestamp = nowSeconds() + offset;
        const signed = headers(id, timestamp, signatureHeader([secret], id, timestamp, body));
        expect(() => new Webhook(secret).verify(body, signed)).not.toThrow();
      }),
      { numRuns: 300 },
    );
  });

  it('verifies with any of the live secrets during a rotation', () => {
    fc.assert(
      fc.property(fc.array(secretArb, { minLength: 1, maxLength: 3 }), idArb, bodyArb, (secrets, id, body) => {
        const timestamp = nowSeconds();
        const signed = headers(id, timestamp, signatureHeader(secrets, id, timestamp, body));
        for (const secret of secrets) expect(() => new Webhook(secret).verify(body, signed)).not.toThrow();
      }),
      { numRuns: 100 },
    );
  });

  it('fails verification after any tampering with the body, id, timestamp, signature or secret', () => {
    type Tamper = 'body' | 'id' | 'timestamp' | 'signature' | 'secret';
    fc.assert(
      fc.property(
        secretArb,
        secretArb,
        idArb,
        bodyArb,
        fc.constantFrom<Tamper>('body', 'id', 'timestamp', 'signature', 'secret'),
        fc.nat(),
        (secret, otherSecret, id, body, what, at) => {
          fc.pre(otherSecret !== secret);
          const timestamp = nowSeconds();
          const signature = signatureHeader([secret], id, timestamp, body);
          let [vBody, vId, vTimestamp, vSignature, vSecret] = [body, id, timestamp, signature, secret];
          if (what === 'body') vBody = `${body} `;
          if (what === 'id') vId = `${id}x`;
          if (what === 'timestamp') vTimestamp = timestamp + 1 + (at % 60);
          if (what === 'signature') vSignature = flipBase64Char(signature, 3 + (at % (signature.length - 3)));
          if (what === 'secret') vSecret = otherSecret;
          expect(() => new Webhook(vSecret).verify(vBody, headers(vId, vTimestamp, vSignature))).toThrow();
        },
      ),
      { numRuns: 500 },
    );
  });
});

/** The signature with one base64 character changed (after the `v1,` prefix). */
function flipBase64Char(signature: string, index: number): string {
  const char = signature[index]!;
  const replacement = char === 'A' ? 'B' : 'A';
  return signature.slice(0, index) + replacement + signature.slice(index + 1);
}

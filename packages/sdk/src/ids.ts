/** Random bytes from Web Crypto (browsers and Node 20 both have it). */
function randomBytes(size: number): Uint8Array {
  return globalThis.crypto.getRandomValues(new Uint8Array(size));
}

const HEX: string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
let lastMs = 0;
let sequence = 0;

/**
 * RFC 9562 UUIDv7: 48-bit Unix milliseconds, then random bits. Monotonic: within one
 * millisecond a 12-bit counter (started in its lower half) orders the ids, and when it runs
 * out the timestamp moves on by one.
 */
export function uuidv7(now: number = Date.now()): string {
  const bytes = randomBytes(16);
  if (now <= lastMs) {
    sequence++;
    if (sequence > 0xfff) {
      lastMs++;
      sequence = 0;
    }
  } else {
    lastMs = now;
    sequence = ((bytes[6]! & 0x07) << 8) | bytes[7]!;
  }
  const time = lastMs;
  for (let i = 0; i < 6; i++) bytes[i] = Math.floor(time / 2 ** (8 * (5 - i))) & 0xff;
  bytes[6] = 0x70 | (sequence >> 8);
  bytes[7] = sequence & 0xff;
  bytes[8] = 0x80 | (bytes[8]! & 0x3f);
  const h = Array.from(bytes, (b) => HEX[b]!).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** ULID: 10 characters of time, 16 of randomness, Crockford base32. */
export function ulid(now: number = Date.now()): string {
  let time = '';
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[t % 32]! + time;
    t = Math.floor(t / 32);
  }
  let random = '';
  for (const byte of randomBytes(16)) random += CROCKFORD[byte % 32];
  return time + random;
}

/** A viewing session id: `svc_` + ULID. */
export function newSessionId(): string {
  return `svc_${ulid()}`;
}

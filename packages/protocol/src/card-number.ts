// A run of digits glued to letters is part of a machine token (a session id such as
// `svc_sample0190a6…` or a ULID), not a number someone wrote down: only free-standing runs count.
const CARD_CANDIDATE = /(?<![\dA-Za-z])(?:\d[ -]?){12,18}\d(?![\dA-Za-z])/g;
// Card networks' numbers start with 2 to 6 (Mastercard, Amex, Diners, JCB, Visa, Discover,
// UnionPay, Maestro); a millisecond timestamp or an id starting with 1 is none of them.
const CARD_NETWORK_START = /^[2-6]/;

function luhnValid(digits: string): boolean {
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return sum % 10 === 0;
}

/** A 13-digit product barcode (EAN-13) with its own check digit; 13-digit cards are long retired. */
function ean13Valid(digits: string): boolean {
  if (digits.length !== 13) return false;
  let sum = 0;
  for (let i = 0; i < 12; i++) sum += (digits.charCodeAt(i) - 48) * (i % 2 ? 3 : 1);
  return (10 - (sum % 10)) % 10 === digits.charCodeAt(12) - 48;
}

// A UUID's dash-separated digit groups (e.g. `…-7272-9249-64312…`) can pass for a card number.
const UUID = /[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}/g;

/**
 * Payment card numbers: 13 to 19 digits (spaces or dashes between them allowed) with a card
 * network's first digit and a valid Luhn sum. Expects the text as `guardText` gives it.
 */
export function hasCardNumber(value: string): boolean {
  const withoutUuids = value.includes('-') ? value.replace(UUID, ' ') : value;
  for (const match of withoutUuids.matchAll(CARD_CANDIDATE)) {
    const digits = match[0].replace(/[ -]/g, '');
    if (CARD_NETWORK_START.test(digits) && luhnValid(digits) && !/^(\d)\1+$/.test(digits) && !ean13Valid(digits)) return true;
  }
  return false;
}

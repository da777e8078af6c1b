/**
 * Phone numbers as people write them in the service's markets (AT BE CH DE ES FR GB IE IT NL PL
 * PT SE US): international (`+49 (0)151 23456789`, `0049 170 1234567`), national with a trunk
 * prefix (`01701234567`, `030 12345678`, `06 12 34 56 78`, `07700 900123`, `070-123 45 67`),
 * national without one, grouped (`612 34 56 78`, `512 345 678`, `(415) 555-2671`), and the
 * bare ten-digit forms of the US and Italian mobiles (`4155552671`, `3471234567`).
 *
 * Bare runs of nine digits without a trunk prefix (`512345678`) are not taken for phone
 * numbers: they cannot be told from ordinary numbers and ids. Expects the text as
 * `guardText` gives it (ASCII digits).
 */
export function hasPhoneNumber(value: string): boolean {
  for (const match of value.matchAll(CANDIDATE)) if (isPhoneNumber(match[0])) return true;
  return false;
}

/**
 * Digits with the separators phone numbers are written with, standing alone: not inside a
 * word, an id (`order-1234567890`), a decimal number or a clock time.
 */
const CANDIDATE = /(?<![\w.,/+-])(?:\+|\(\+?)?\d(?:[ ().\/-]{0,3}\d){5,19}(?![\w:]|[.,/-]?\d)/g;
const NANP = /^[2-9]\d\d[2-9]\d{6}$/;
const SEPARATED = /[ ().\/-]+/;
const DECIMAL = /^\d+\.\d+$/;

function isPhoneNumber(candidate: string): boolean {
  const digits = candidate.replace(/\D/g, '');
  const count = digits.length;
  if (candidate.startsWith('+') || candidate.startsWith('(+')) return count >= 7 && count <= 15;
  if (DECIMAL.test(candidate)) return false;
  if (digits.startsWith('00')) return digits[2] !== '0' && count >= 10 && count <= 17;
  if (digits.startsWith('0')) return count >= 9 && count <= 12;
  if (count < 9 || count > 11) return false;
  const groups = candidate.split(SEPARATED).filter(Boolean);
  if (groups.length === 1) return count === 10 ? NANP.test(digits) || digits.startsWith('3') : count === 11 && digits.startsWith('1') && NANP.test(digits.slice(1));
  // `10000-20000` is a range; `612 34 56 78`, `512 345 678` and `415-555-2671` are numbers.
  if (groups.length >= 3) return groups.every((group) => group.length <= 4);
  return /^\(\d{3}\)/.test(candidate) || (groups[0]!.length === 3 && digits.startsWith('3'));
}

/**
 * The form of a text that the privacy guard reads: compatibility characters folded (NFKC turns
 * a full-width `＠` into `@`, full-width digits into ASCII ones) and every decimal digit of any
 * script read as its ASCII digit (NFKC leaves Arabic-Indic or Devanagari digits as they are).
 * ASCII text is returned as it is, without any work beyond one scan.
 */
export function guardText(value: string): string {
  if (!NON_ASCII.test(value)) return value;
  const folded = value.normalize('NFKC');
  return NON_ASCII_DIGIT.test(folded) ? folded.replace(NON_ASCII_DIGIT_ALL, asciiDigit) : folded;
}

const NON_ASCII = /[^\u0000-\u007f]/;
const NON_ASCII_DIGIT = /(?![0-9])\p{Nd}/u;
const NON_ASCII_DIGIT_ALL = /(?![0-9])\p{Nd}/gu;
const DIGIT = /\p{Nd}/u;
const digitValues = new Map<number, string>();

/**
 * Unicode encodes each script's digits 0 to 9 as ten consecutive code points, so a digit's
 * value is its distance from the start of its run of digits, modulo ten.
 */
function asciiDigit(digit: string): string {
  const codePoint = digit.codePointAt(0)!;
  let value = digitValues.get(codePoint);
  if (value === undefined) {
    let start = codePoint;
    while (DIGIT.test(String.fromCodePoint(start - 1))) start--;
    value = String((codePoint - start) % 10);
    digitValues.set(codePoint, value);
  }
  return value;
}

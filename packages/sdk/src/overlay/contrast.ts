/**
 * WCAG 2.2 contrast for the tenant's theme colour: the overlay derives every colour it draws
 * from `theme.primaryColor` so that text reaches 4.5:1 and bars and outlines 3:1 whatever the
 * tenant picked (a colour that cannot reach it on a card is darkened or lightened until it does).
 */
export type Rgb = readonly [number, number, number];

/** Body text and controls' labels (WCAG 1.4.3, AA). */
export const TEXT_CONTRAST = 4.5;
/** Bars, outlines and other non-text parts (WCAG 1.4.11). */
export const GRAPHIC_CONTRAST = 3;

export const WHITE: Rgb = [255, 255, 255];
export const INK: Rgb = [20, 18, 31];

/** `#rgb` or `#rrggbb`; null for anything else. */
export function parseHex(color: string): Rgb | null {
  const match = /^#([0-9a-f]{3}|[0-9a-f]{6})$/i.exec(color.trim());
  if (!match) return null;
  const hex = match[1]!.length === 3 ? [...match[1]!].map((c) => c + c).join('') : match[1]!;
  return [0, 2, 4].map((i) => parseInt(hex.slice(i, i + 2), 16)) as unknown as Rgb;
}

export function toHex(rgb: Rgb): string {
  return `#${rgb.map((c) => Math.round(c).toString(16).padStart(2, '0')).join('')}`;
}

function channel(value: number): number {
  const c = value / 255;
  return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
}

export function luminance([r, g, b]: Rgb): number {
  return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
}

export function contrast(a: Rgb, b: Rgb): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (hi + 0.05) / (lo + 0.05);
}

/** Ink or white, whichever reads better on `background`. */
export function textOn(background: Rgb): Rgb {
  return contrast(INK, background) >= contrast(WHITE, background) ? INK : WHITE;
}

/**
 * `color` moved towards black (on a light background) or white (on a dark one) in small steps
 * until it reaches `ratio` against `background`; unchanged when it already does.
 */
export function adjustTo(color: Rgb, background: Rgb, ratio: number): Rgb {
  const target: Rgb = luminance(background) > 0.18 ? [0, 0, 0] : WHITE;
  let current = color;
  for (let step = 1; contrast(current, background) < ratio && step <= 20; step++) {
    const t = step / 20;
    current = color.map((c, i) => c + (target[i]! - c) * t) as unknown as Rgb;
  }
  return current;
}

/** The colours the overlay's style sheet reads, for a light and a dark card. */
export interface ThemeColors {
  primary: string;
  onPrimary: string;
  accentLight: string;
  accentDark: string;
}

export const LIGHT_CARD: Rgb = [255, 255, 255];
export const DARK_CARD: Rgb = [29, 27, 41];

/** Readable colours from a theme colour; an unreadable or malformed one falls back to the default. */
export function themeColors(primaryColor: string, fallback = '#5b3df5'): ThemeColors {
  const given = parseHex(primaryColor) ?? parseHex(fallback)!;
  // Mid-tones (around #777) read well with neither: darkened until white text on them does.
  const primary = contrast(textOn(given), given) >= TEXT_CONTRAST ? given : adjustTo(given, WHITE, TEXT_CONTRAST);
  return {
    primary: toHex(primary),
    onPrimary: toHex(textOn(primary)),
    accentLight: toHex(adjustTo(primary, LIGHT_CARD, GRAPHIC_CONTRAST)),
    accentDark: toHex(adjustTo(primary, DARK_CARD, GRAPHIC_CONTRAST)),
  };
}

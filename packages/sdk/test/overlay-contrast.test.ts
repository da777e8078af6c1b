import { describe, expect, it } from 'vitest';
import { contrast, DARK_CARD, GRAPHIC_CONTRAST, LIGHT_CARD, parseHex, TEXT_CONTRAST, themeColors } from '../src/overlay/contrast';

describe('theme colours reach WCAG AA contrast', () => {
  it('knows the reference ratios', () => {
    expect(contrast([0, 0, 0], [255, 255, 255])).toBeCloseTo(21, 5);
    expect(contrast(parseHex('#777')!, [255, 255, 255])).toBeCloseTo(4.48, 2);
  });

  it('derives readable text on the primary colour and accents of at least 3:1 on light and dark cards, for any theme', () => {
    const themes = ['#5b3df5', '#ffff00', '#E4007C', '#00A86B', '#777777', '#ffffff', '#000000', '#1d1b29', '#f0f0f0', '#fc0', 'not-a-colour'];
    for (let i = 0; i < 200; i++) themes.push(`#${Math.floor((i * 0x1f3a5b) % 0xffffff).toString(16).padStart(6, '0')}`);
    for (const theme of themes) {
      const colors = themeColors(theme);
      expect(contrast(parseHex(colors.onPrimary)!, parseHex(colors.primary)!), theme).toBeGreaterThanOrEqual(TEXT_CONTRAST);
      expect(contrast(parseHex(colors.accentLight)!, LIGHT_CARD), theme).toBeGreaterThanOrEqual(GRAPHIC_CONTRAST);
      expect(contrast(parseHex(colors.accentDark)!, DARK_CARD), theme).toBeGreaterThanOrEqual(GRAPHIC_CONTRAST);
    }
  });

  it('keeps a theme colour that already reads well, and falls back to the default for a malformed one', () => {
    expect(themeColors('#5B3DF5')).toMatchObject({ primary: '#5b3df5', onPrimary: '#ffffff', accentLight: '#5b3df5' });
    expect(themeColors('#ffff00').accentLight).not.toBe('#ffff00');
    expect(themeColors('red').primary).toBe('#5b3df5');
  });
});

/** ISO 3166-1 alpha-2 codes with their English names, from the browser's own region names. */
export function countryOptions(locale = 'en'): Array<{ code: string; name: string }> {
  const names = new Intl.DisplayNames([locale], { type: 'region', fallback: 'none' });
  const list: Array<{ code: string; name: string }> = [];
  const A = 65;
  for (let i = 0; i < 26; i++) {
    for (let j = 0; j < 26; j++) {
      const code = String.fromCharCode(A + i, A + j);
      let name: string | undefined;
      try {
        name = names.of(code);
      } catch {
        name = undefined;
      }
      // Codes the browser cannot name (user-assigned, reserved) are not countries to pick.
      if (name && name !== code && !/^(XA|XB|XK|QO|EU|EZ|UN|ZZ)$/.test(code)) list.push({ code, name });
    }
  }
  return list.sort((a, b) => a.name.localeCompare(b.name, locale));
}

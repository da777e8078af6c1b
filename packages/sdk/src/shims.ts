const warned = new Set<string>();

/** Logs a deprecation once per page. */
export function warnOnce(what: string, instead: string): void {
  if (warned.has(what)) return;
  warned.add(what);
  console.warn(`[SvcSDK] ${what} is deprecated since 0.2.0-beta and will be removed: ${instead}. See MIGRATION.md.`);
}

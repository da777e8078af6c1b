import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Reader } from 'mmdb-lib';

/** Country codes that proxies use for "unknown" or "Tor", which say nothing about the viewer. */
const NON_COUNTRIES = new Set(['XX', 'T1', 'ZZ']);

export interface CountrySources {
  /** Value of the trusted country header, when one is configured and present. */
  header?: string | null;
  /** The client address; looked up, never stored. */
  ip?: string | null;
  /** The tenant's fallback. */
  fallback?: string | null;
}

/**
 * Viewer country: trusted proxy header, then the embedded IP-to-country database
 * (geo-whois-asn-country, CC0), then the tenant's fallback, else null.
 */
export class CountryResolver {
  private constructor(private readonly reader: { get(ip: string): unknown } | null) {}

  /** Loads the database that ships in the npm package. */
  static embedded(): CountryResolver {
    const require = createRequire(import.meta.url);
    const path = require.resolve('@ip-location-db/geo-whois-asn-country-mmdb/geo-whois-asn-country.mmdb');
    return new CountryResolver(new Reader(readFileSync(path)));
  }

  /** A resolver without a database (header and fallback only). */
  static headerOnly(): CountryResolver {
    return new CountryResolver(null);
  }

  lookupIp(ip: string): string | null {
    if (!this.reader) return null;
    try {
      const record = this.reader.get(ip) as { country_code?: string } | null;
      return normalize(record?.country_code ?? null);
    } catch {
      return null;
    }
  }

  resolve(sources: CountrySources): string | null {
    const fromHeader = normalize(sources.header ?? null);
    if (fromHeader) return fromHeader;
    const fromIp = sources.ip ? this.lookupIp(stripIpv4Mapping(sources.ip)) : null;
    return fromIp ?? normalize(sources.fallback ?? null);
  }
}

function normalize(value: string | null): string | null {
  if (!value) return null;
  const code = value.trim().toUpperCase();
  return /^[A-Z]{2}$/.test(code) && !NON_COUNTRIES.has(code) ? code : null;
}

function stripIpv4Mapping(ip: string): string {
  return ip.startsWith('::ffff:') && ip.includes('.') ? ip.slice(7) : ip;
}

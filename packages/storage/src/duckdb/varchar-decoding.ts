import { createRequire } from 'node:module';

/**
 * @duckdb/node-api turns VARCHAR values into JS strings with a default `TextDecoder`, which
 * drops a leading U+FEFF (byte-order mark): a user id that begins with one would come back
 * without it, and one that is only that character would come back empty. Its decoder is a
 * property of one of its modules that every string read goes through; this swaps it for one
 * that keeps the character. Tested in duckdb-storage.test.ts (a round trip of such values),
 * which fails if a new version of the library reads strings some other way and drops it again.
 */
export function keepByteOrderMarks(): void {
  const require = createRequire(import.meta.url);
  let accessors: { textDecoder?: unknown };
  try {
    accessors = require('@duckdb/node-api/lib/vectors/dataAccessors.js') as { textDecoder?: unknown };
  } catch {
    return; // laid out differently: the round-trip test tells whether it still needs this
  }
  if (accessors.textDecoder instanceof TextDecoder && !accessors.textDecoder.ignoreBOM) {
    accessors.textDecoder = new TextDecoder('utf-8', { ignoreBOM: true });
  }
}

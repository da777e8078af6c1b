/** Readers of DuckDB row values (BIGINTs arrive as bigint, NULLs as null). */
export function nullableString(value: unknown): string | null {
  return value === null || value === undefined ? null : String(value);
}

export function nullableNumber(value: unknown): number | null {
  return value === null || value === undefined ? null : Number(value);
}

/** A count or sum; NULL (no rows) reads as 0. */
export function numberOrZero(value: unknown): number {
  return value === null || value === undefined ? 0 : Number(value);
}

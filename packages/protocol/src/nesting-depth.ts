/**
 * Whether `value` holds objects or arrays nested more than `maxDepth` levels deep, the value
 * itself being level 1 when it is one. The walk stops at `maxDepth + 1` levels, so an
 * arbitrarily deep value (JSON.parse builds one without recursing) cannot overflow the stack
 * here, as it would in JSON.stringify or a recursive validator.
 */
export function nestsDeeperThan(value: unknown, maxDepth: number): boolean {
  return deeper(value, maxDepth);
}

function deeper(value: unknown, levelsLeft: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (levelsLeft <= 0) return true;
  if (Array.isArray(value)) {
    for (const item of value) if (deeper(item, levelsLeft - 1)) return true;
    return false;
  }
  const record = value as Record<string, unknown>;
  for (const key in record) if (deeper(record[key], levelsLeft - 1)) return true;
  return false;
}

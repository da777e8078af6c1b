/**
 * Whether `value` holds objects or arrays nested more than `maxDepth` levels deep, the value
 * itself being level 1 when it is one. The walk stops at `maxDepth + 1` levels, so an
 * arbitrarily deep value (JSON.parse builds one without recursing) cannot overflow the stack
 * here, as it would in JSON.stringify or a recursive validator. It runs on every ingested
 * event: only containers are visited (a call per object or array, none per string or number).
 */
export function nestsDeeperThan(value: unknown, maxDepth: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  return maxDepth < 1 || containsDeeper(value, maxDepth - 1);
}

/** Whether a container, with `levelsBelow` more levels allowed inside it, holds one nested deeper. */
function containsDeeper(container: object, levelsBelow: number): boolean {
  if (Array.isArray(container)) {
    for (const item of container) {
      if (item !== null && typeof item === 'object' && (levelsBelow < 1 || containsDeeper(item, levelsBelow - 1))) return true;
    }
    return false;
  }
  const record = container as Record<string, unknown>;
  for (const key in record) {
    const item = record[key];
    if (item !== null && typeof item === 'object' && (levelsBelow < 1 || containsDeeper(item, levelsBelow - 1))) return true;
  }
  return false;
}

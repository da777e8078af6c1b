/**
 * A small deterministic random source (mulberry32): the same seed gives the same sequence,
 * so a run of a randomized test can be replayed.
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** The seed from `SVC_FAULT_SEED` when set (to replay a run), else a fresh one; printed either way. */
export function faultSeed(label: string): number {
  const given = process.env.SVC_FAULT_SEED;
  const seed = given ? Number(given) : Math.floor(Math.random() * 2 ** 31);
  if (!Number.isInteger(seed)) throw new Error(`SVC_FAULT_SEED must be an integer; got "${given}"`);
  console.info(`${label}: seed ${seed} (replay with SVC_FAULT_SEED=${seed})`);
  return seed;
}

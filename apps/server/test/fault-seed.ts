/** The seed from `SVC_FAULT_SEED` when set (to replay a run), else a fresh one; printed either way. */
export function faultSeed(label: string): number {
  const given = process.env.SVC_FAULT_SEED;
  const seed = given ? Number(given) : Math.floor(Math.random() * 2 ** 31);
  if (!Number.isInteger(seed)) throw new Error(`SVC_FAULT_SEED must be an integer; got "${given}"`);
  console.info(`${label}: seed ${seed} (replay with SVC_FAULT_SEED=${seed})`);
  return seed;
}

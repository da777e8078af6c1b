/** 32-bit words of a UUID. */
export const UUID_WORDS = 4;
/** Words of a pair: the tenant + 1, then the id's four words. */
const PAIR_WORDS = 1 + UUID_WORDS;
/** Index slots per pair at least: linear probing stays short below half full. */
const SLOTS_PER_ENTRY = 2;
const MIN_SLOTS = 16;

/** Value of each hex digit's character code, -1 for any other character. */
const HEX = new Int8Array(128).fill(-1);
for (let c = 0; c < 10; c++) HEX[48 + c] = c;
for (let c = 0; c < 6; c++) HEX[65 + c] = HEX[97 + c] = 10 + c;

/**
 * A set of (tenant, UUID) pairs in typed arrays: the pairs one after the other, in the order they
 * came, and an open-addressing index (linear probing) of 32-bit slots, each holding a pair's
 * position and some bits of its hash. A lookup of an absent pair, the common case, mostly reads
 * one slot of the index alone, which is a few megabytes for half a million pairs: the pairs
 * themselves are read only when those bits match. No objects for the garbage collector to
 * trace. Holds at most the capacity it was made for (no removal, no growth: RecentKeys drops a
 * whole table at once). The arrays are allocated zeroed and whole, so their pages cost memory
 * only once written.
 */
export class EventIdTable {
  size = 0;
  /** Each pair: the tenant + 1, then the id's four words. */
  private readonly pairs: Uint32Array;
  /** 0 for a free slot, else the hash's check bits above the pair's position + 1. */
  private readonly index: Uint32Array;
  private readonly mask: number;
  private readonly positionBits: number;
  private readonly positionMask: number;
  /** The check bits of the pair `find` looked for last (for `add`). */
  private lastCheck = 0;

  constructor(readonly capacity: number) {
    let count = MIN_SLOTS;
    while (count < capacity * SLOTS_PER_ENTRY) count *= 2;
    this.index = new Uint32Array(count);
    this.mask = count - 1;
    this.pairs = new Uint32Array(capacity * PAIR_WORDS);
    let bits = 1;
    while (2 ** bits <= capacity) bits++;
    if (bits > 31) throw new Error(`An EventIdTable holds fewer than 2^31 ids, not ${capacity}.`);
    this.positionBits = bits;
    this.positionMask = 2 ** bits - 1;
  }

  /** Whether the table can hold ids of this tenant (an integer from 0 to 2^32 − 2). */
  static holds(tenantSeq: number): boolean {
    return Number.isInteger(tenantSeq) && tenantSeq >= 0 && tenantSeq < 0xffffffff;
  }

  /**
   * Writes the 128 bits of `id` into `words` when it is a UUID in the canonical 8-4-4-4-12
   * hex form (either case); false, `words` undefined, for anything else.
   */
  static parseUuid(id: string, words: Uint32Array): boolean {
    if (id.length !== 36) return false;
    if (id.charCodeAt(8) !== 45 || id.charCodeAt(13) !== 45 || id.charCodeAt(18) !== 45 || id.charCodeAt(23) !== 45) return false;
    const w0 = hexWord(id, 0, 8, 0);
    const w1 = hexWord(id, 14, 4, hexWord(id, 9, 4, 0));
    const w2 = hexWord(id, 24, 4, hexWord(id, 19, 4, 0));
    const w3 = hexWord(id, 28, 8, 0);
    // A character other than a hex digit made its word NaN.
    if (Number.isNaN(w0 + w1 + w2 + w3)) return false;
    words[0] = w0;
    words[1] = w1;
    words[2] = w2;
    words[3] = w3;
    return true;
  }

  has(tenantSeq: number, words: Uint32Array): boolean {
    return this.find(tenantSeq, words) >= 0;
  }

  /** Adds the pair unless it is there; throws when the table holds `capacity` pairs already. */
  add(tenantSeq: number, words: Uint32Array): void {
    const found = this.find(tenantSeq, words);
    if (found >= 0) return;
    if (this.size >= this.capacity) throw new Error(`An EventIdTable holds at most ${this.capacity} ids.`);
    const position = this.size++;
    const base = position * PAIR_WORDS;
    const pairs = this.pairs;
    pairs[base] = tenantSeq + 1;
    pairs[base + 1] = words[0]!;
    pairs[base + 2] = words[1]!;
    pairs[base + 3] = words[2]!;
    pairs[base + 4] = words[3]!;
    this.index[~found] = (this.lastCheck << this.positionBits) | (position + 1);
  }

  /** The pair's position, or, when absent, ~ the free slot of the index where it goes. */
  private find(tenantSeq: number, words: Uint32Array): number {
    const tag = tenantSeq + 1;
    const w0 = words[0]!;
    const w1 = words[1]!;
    const w2 = words[2]!;
    const w3 = words[3]!;
    const hash = slotHash(tag, w0, w1, w2, w3);
    // Bits of a hash of their own: the slot's bits say nothing more about the pair.
    const check = Math.imul(hash, 0x9e3779b1) >>> this.positionBits;
    this.lastCheck = check;
    const { index, pairs, positionBits, positionMask } = this;
    for (let slot = hash & this.mask; ; slot = (slot + 1) & this.mask) {
      const entry = index[slot]!;
      if (entry === 0) return ~slot;
      if (entry >>> positionBits !== check) continue;
      const position = (entry & positionMask) - 1;
      const base = position * PAIR_WORDS;
      if (pairs[base] === tag && pairs[base + 4] === w3 && pairs[base + 3] === w2 && pairs[base + 2] === w1 && pairs[base + 1] === w0) return position;
    }
  }
}

/** `word` followed by the `count` hex digits of `text` from `start`, as an unsigned number; NaN when one is no hex digit. */
function hexWord(text: string, start: number, count: number, word: number): number {
  let value = word;
  for (let i = start; i < start + count; i++) {
    const c = text.charCodeAt(i);
    const digit = c < 128 ? HEX[c]! : -1;
    if (digit < 0) return Number.NaN;
    value = value * 16 + digit;
  }
  return value;
}

/**
 * A 32-bit hash of a pair. The last word is random in UUIDv4 and v7 alike; the others are mixed
 * in so that ids with a constant end (or made up by hand) still spread.
 */
function slotHash(tag: number, w0: number, w1: number, w2: number, w3: number): number {
  let h = Math.imul(w3 ^ Math.imul(tag, 0x9e3779b1), 0x85ebca6b);
  h = Math.imul(h ^ w2 ^ (h >>> 15), 0xc2b2ae35);
  h = Math.imul(h ^ w1 ^ (h >>> 13), 0x85ebca6b);
  h ^= w0 ^ (h >>> 16);
  h = Math.imul(h ^ (h >>> 15), 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** 32-bit words of a UUID. */
export const UUID_WORDS = 4;
/** Words of a slot: the tenant + 1 (0 marks a free slot), then the id's four words. */
const SLOT_WORDS = 1 + UUID_WORDS;
/** Slots per entry at most: linear probing stays short below half full. */
const SLOTS_PER_ENTRY = 2;
const MIN_SLOTS = 16;

/** Value of each hex digit's character code, -1 for any other character. */
const HEX = new Int8Array(128).fill(-1);
for (let c = 0; c < 10; c++) HEX[48 + c] = c;
for (let c = 0; c < 6; c++) HEX[65 + c] = HEX[97 + c] = 10 + c;

/**
 * A set of (tenant, UUID) pairs in one typed array, open addressing with linear probing: a
 * lookup hashes the id's bits and reads a slot or two, and the entries are no objects for the
 * garbage collector to trace. Holds at most the capacity it was made for (no removal, no
 * growth: RecentKeys drops a whole table at once). The array is allocated zeroed and whole,
 * so its pages cost memory only once written.
 */
export class EventIdTable {
  size = 0;
  private readonly slots: Uint32Array;
  private readonly mask: number;

  constructor(readonly capacity: number) {
    let count = MIN_SLOTS;
    while (count < capacity * SLOTS_PER_ENTRY) count *= 2;
    this.slots = new Uint32Array(count * SLOT_WORDS);
    this.mask = count - 1;
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
    let word = 0;
    let digits = 0;
    for (let i = 0; i < 36; i++) {
      if (i === 8 || i === 13 || i === 18 || i === 23) continue;
      const c = id.charCodeAt(i);
      const value = c < 128 ? HEX[c]! : -1;
      if (value < 0) return false;
      word = (word << 4) | value;
      if (++digits === 8) {
        words[(i - 4) >> 3] = word;
        word = 0;
        digits = 0;
      }
    }
    return true;
  }

  has(tenantSeq: number, words: Uint32Array): boolean {
    return this.find(tenantSeq, words) >= 0;
  }

  /** Adds the pair unless it is there; throws when the table holds `capacity` pairs already. */
  add(tenantSeq: number, words: Uint32Array): void {
    const at = this.find(tenantSeq, words);
    if (at >= 0) return;
    if (this.size >= this.capacity) throw new Error(`An EventIdTable holds at most ${this.capacity} ids.`);
    const base = ~at;
    const slots = this.slots;
    slots[base] = tenantSeq + 1;
    slots[base + 1] = words[0]!;
    slots[base + 2] = words[1]!;
    slots[base + 3] = words[2]!;
    slots[base + 4] = words[3]!;
    this.size++;
  }

  /** The word offset of the pair's slot, or, when absent, ~ the offset of the free slot where it goes. */
  private find(tenantSeq: number, words: Uint32Array): number {
    const tag = tenantSeq + 1;
    const w0 = words[0]!;
    const w1 = words[1]!;
    const w2 = words[2]!;
    const w3 = words[3]!;
    const slots = this.slots;
    // The last word is random in UUIDv4 and v7 alike; the others are mixed in so that ids with
    // a constant end (or made up by hand) still spread.
    let h = Math.imul(w3 ^ Math.imul(tag, 0x9e3779b1), 0x85ebca6b);
    h = Math.imul(h ^ w2 ^ (h >>> 15), 0xc2b2ae35);
    h = Math.imul(h ^ w1 ^ (h >>> 13), 0x85ebca6b);
    h ^= w0 ^ (h >>> 16);
    h = Math.imul(h ^ (h >>> 15), 0xc2b2ae35);
    h ^= h >>> 16;
    for (let slot = h & this.mask; ; slot = (slot + 1) & this.mask) {
      const base = slot * SLOT_WORDS;
      const stored = slots[base]!;
      if (stored === 0) return ~base;
      if (stored === tag && slots[base + 4] === w3 && slots[base + 3] === w2 && slots[base + 2] === w1 && slots[base + 1] === w0) return base;
    }
  }
}

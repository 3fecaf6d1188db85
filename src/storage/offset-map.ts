/**
 * The cleaner's key -> latest offset map in a fixed block of memory (Kafka's SkimpyOffsetMap): 24
 * bytes a slot, a 128-bit hash of the key and the offset, open addressing with linear probing.
 */
import { assert } from '../model/index.ts'

/** Bytes per slot: a 16-byte key hash and an 8-byte offset. */
export const OFFSET_MAP_SLOT_BYTES = 24
const INTS_PER_SLOT = OFFSET_MAP_SLOT_BYTES / 4
const TWO_POW_32 = 2 ** 32

function rotl(x: number, r: number): number {
  return (x << r) | (x >>> (32 - r))
}

function fmix32(h: number): number {
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  return h ^ (h >>> 16)
}

const C1 = 0x239b961b
const C2 = 0xab0e9789
const C3 = 0x38b34ae5
const C4 = 0xa1e38b93

/**
 * MurmurHash3 x86_128 (Austin Appleby, public domain) of `key`, as four int32 words into `out`.
 * Not cryptographic: collisions of 128-bit hashes are negligible for a map of at most millions of keys.
 */
export function murmur3x86x128(key: Uint8Array, out: Int32Array, seed = 0): void {
  const len = key.length
  const blocks = len >> 4
  let h1 = seed | 0
  let h2 = seed | 0
  let h3 = seed | 0
  let h4 = seed | 0
  const word = (i: number) => key[i]! | (key[i + 1]! << 8) | (key[i + 2]! << 16) | (key[i + 3]! << 24)
  for (let b = 0; b < blocks; b++) {
    const i = b * 16
    let k1 = word(i)
    let k2 = word(i + 4)
    let k3 = word(i + 8)
    let k4 = word(i + 12)
    k1 = Math.imul(rotl(Math.imul(k1, C1), 15), C2)
    h1 ^= k1
    h1 = (Math.imul(rotl(h1, 19) + h2, 5) + 0x561ccd1b) | 0
    k2 = Math.imul(rotl(Math.imul(k2, C2), 16), C3)
    h2 ^= k2
    h2 = (Math.imul(rotl(h2, 17) + h3, 5) + 0x0bcaa747) | 0
    k3 = Math.imul(rotl(Math.imul(k3, C3), 17), C4)
    h3 ^= k3
    h3 = (Math.imul(rotl(h3, 15) + h4, 5) + 0x96cd1c35) | 0
    k4 = Math.imul(rotl(Math.imul(k4, C4), 18), C1)
    h4 ^= k4
    h4 = (Math.imul(rotl(h4, 13) + h1, 5) + 0x32ac3b17) | 0
  }
  const tail = blocks * 16
  const rest = len & 15
  const k = [0, 0, 0, 0]
  for (let i = 0; i < rest; i++) k[i >> 2]! ^= key[tail + i]! << ((i & 3) * 8)
  if (rest > 12) h4 ^= Math.imul(rotl(Math.imul(k[3]!, C4), 18), C1)
  if (rest > 8) h3 ^= Math.imul(rotl(Math.imul(k[2]!, C3), 17), C4)
  if (rest > 4) h2 ^= Math.imul(rotl(Math.imul(k[1]!, C2), 16), C3)
  if (rest > 0) h1 ^= Math.imul(rotl(Math.imul(k[0]!, C1), 15), C2)
  h1 ^= len
  h2 ^= len
  h3 ^= len
  h4 ^= len
  h1 = (h1 + h2 + h3 + h4) | 0
  h2 = (h2 + h1) | 0
  h3 = (h3 + h1) | 0
  h4 = (h4 + h1) | 0
  h1 = fmix32(h1)
  h2 = fmix32(h2)
  h3 = fmix32(h3)
  h4 = fmix32(h4)
  h1 = (h1 + h2 + h3 + h4) | 0
  h2 = (h2 + h1) | 0
  h3 = (h3 + h1) | 0
  h4 = (h4 + h1) | 0
  out[0] = h1
  out[1] = h2
  out[2] = h3
  out[3] = h4
}

/**
 * A bounded map from record key to the latest offset seen for it. Its memory is fixed at
 * construction (`memoryBytes`, e.g. `log.cleaner.dedupe.buffer.size`); it accepts keys until
 * `entriesMax` (`loadFactor` of the slots) and then reports `isFull`.
 */
export class OffsetMap {
  readonly slots: number
  readonly entriesMax: number
  readonly #ints: Int32Array
  readonly #hash = new Int32Array(4)
  #size = 0

  constructor(memoryBytes: number, loadFactor = 0.9) {
    this.slots = Math.floor(memoryBytes / OFFSET_MAP_SLOT_BYTES)
    assert(this.slots >= 1, `offset map needs at least ${OFFSET_MAP_SLOT_BYTES} bytes`)
    assert(loadFactor > 0 && loadFactor <= 1, 'load factor must be in (0, 1]')
    this.entriesMax = Math.max(1, Math.floor(this.slots * loadFactor))
    this.#ints = new Int32Array(this.slots * INTS_PER_SLOT)
    this.clear()
  }

  get size(): number {
    return this.#size
  }

  get isFull(): boolean {
    return this.#size >= this.entriesMax
  }

  /** Free slots before the map is full. */
  get remaining(): number {
    return this.entriesMax - this.#size
  }

  /** Forget every key (the memory stays). */
  clear(): void {
    this.#ints.fill(-1)
    this.#size = 0
  }

  /** The slot holding `key`'s hash, or the empty slot where it would go. */
  #find(key: Uint8Array): number {
    const h = this.#hash
    murmur3x86x128(key, h)
    const ints = this.#ints
    let slot = (h[0]! >>> 0) % this.slots
    for (;;) {
      const at = slot * INTS_PER_SLOT
      if (ints[at + 4] === -1 && ints[at + 5] === -1) return slot
      if (ints[at] === h[0] && ints[at + 1] === h[1] && ints[at + 2] === h[2] && ints[at + 3] === h[3])
        return slot
      slot = slot + 1 === this.slots ? 0 : slot + 1
    }
  }

  /** Record `offset` for `key` (kept if larger than the one stored). The map must not be full for a new key. */
  put(key: Uint8Array, offset: number): void {
    assert(offset >= 0 && Number.isSafeInteger(offset), 'offset out of range')
    const slot = this.#find(key)
    const at = slot * INTS_PER_SLOT
    const ints = this.#ints
    const empty = ints[at + 4] === -1 && ints[at + 5] === -1
    if (empty) {
      assert(!this.isFull, 'offset map is full')
      const h = this.#hash
      ints[at] = h[0]!
      ints[at + 1] = h[1]!
      ints[at + 2] = h[2]!
      ints[at + 3] = h[3]!
      this.#size++
    } else if (readOffset(ints, at) >= offset) {
      return
    }
    ints[at + 4] = Math.floor(offset / TWO_POW_32) | 0
    ints[at + 5] = offset >>> 0
  }

  /** The latest offset recorded for `key`, or -1. */
  get(key: Uint8Array): number {
    const at = this.#find(key) * INTS_PER_SLOT
    const ints = this.#ints
    if (ints[at + 4] === -1 && ints[at + 5] === -1) return -1
    return readOffset(ints, at)
  }
}

function readOffset(ints: Int32Array, at: number): number {
  return ints[at + 4]! * TWO_POW_32 + (ints[at + 5]! >>> 0)
}

/**
 * A segment's sparse offset index, Kafka's `.index` format: 8-byte entries (relative offset int32,
 * file position int32), both strictly increasing. Held in memory; the segment writes it to disk.
 */
import { assert } from '../model/index.ts'

/** Bytes per entry: relative offset (int32) + position (int32). */
export const OFFSET_INDEX_ENTRY_BYTES = 8

export interface OffsetPosition {
  /** Offset relative to the segment's base offset. */
  readonly relativeOffset: number
  /** Byte position of a batch in the segment file. */
  readonly position: number
}

/** The index of one segment. Bounded: at most `entriesMax` entries (from `segment.index.bytes`). */
export class OffsetIndex {
  readonly entriesMax: number
  #buf: Buffer
  #entries = 0

  constructor(indexBytesMax: number) {
    this.entriesMax = Math.floor(indexBytesMax / OFFSET_INDEX_ENTRY_BYTES)
    assert(this.entriesMax >= 1, 'offset index must hold at least one entry')
    this.#buf = Buffer.alloc(Math.min(this.entriesMax, 8) * OFFSET_INDEX_ENTRY_BYTES)
  }

  /**
   * Load an index file's bytes, or null when they are not a sane index for a segment of
   * `segmentBytes`: a partial entry, entries not strictly increasing, a position past the end.
   */
  static fromBytes(bytes: Buffer, indexBytesMax: number, segmentBytes: number): OffsetIndex | null {
    if (bytes.length % OFFSET_INDEX_ENTRY_BYTES !== 0) return null
    const index = new OffsetIndex(Math.max(indexBytesMax, bytes.length))
    let lastRel = -1
    let lastPos = -1
    for (let at = 0; at < bytes.length; at += OFFSET_INDEX_ENTRY_BYTES) {
      const rel = bytes.readInt32BE(at)
      const pos = bytes.readInt32BE(at + 4)
      if (rel <= lastRel || pos <= lastPos || pos >= segmentBytes || rel < 0) return null
      lastRel = rel
      lastPos = pos
      index.append(rel, pos)
    }
    return index
  }

  get entries(): number {
    return this.#entries
  }

  get isFull(): boolean {
    return this.#entries >= this.entriesMax
  }

  /** The last entry, or null when empty. */
  get lastEntry(): OffsetPosition | null {
    if (this.#entries === 0) return null
    return this.#entryAt(this.#entries - 1)
  }

  #entryAt(i: number): OffsetPosition {
    const at = i * OFFSET_INDEX_ENTRY_BYTES
    return { relativeOffset: this.#buf.readInt32BE(at), position: this.#buf.readInt32BE(at + 4) }
  }

  /** Add an entry; both fields must be greater than the last entry's. */
  append(relativeOffset: number, position: number): void {
    assert(!this.isFull, 'offset index is full')
    const at = this.#entries * OFFSET_INDEX_ENTRY_BYTES
    if (at > 0) {
      // Read in place (no entry object) and build the message only on failure: once per index entry.
      const lastRelative = this.#buf.readInt32BE(at - OFFSET_INDEX_ENTRY_BYTES)
      const lastPosition = this.#buf.readInt32BE(at - OFFSET_INDEX_ENTRY_BYTES + 4)
      if (!(relativeOffset > lastRelative && position > lastPosition)) {
        assert(
          false,
          `offset index entries must increase: (${relativeOffset}, ${position}) after (${lastRelative}, ${lastPosition})`,
        )
      }
    }
    assert(relativeOffset >= 0 && relativeOffset <= 0x7fffffff, 'relative offset out of int32 range')
    if (at + OFFSET_INDEX_ENTRY_BYTES > this.#buf.length) {
      const grown = Buffer.alloc(Math.min(this.#buf.length * 2, this.entriesMax * OFFSET_INDEX_ENTRY_BYTES))
      this.#buf.copy(grown)
      this.#buf = grown
    }
    this.#buf.writeInt32BE(relativeOffset, at)
    this.#buf.writeInt32BE(position, at + 4)
    this.#entries++
  }

  /**
   * The entry with the largest relative offset <= `relativeOffset`, or position 0 when there is
   * none: a batch containing the offset starts at or after the returned position.
   */
  lookup(relativeOffset: number): OffsetPosition {
    let lo = 0
    let hi = this.#entries - 1
    let found = -1
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1
      if (this.#buf.readInt32BE(mid * OFFSET_INDEX_ENTRY_BYTES) <= relativeOffset) {
        found = mid
        lo = mid + 1
      } else {
        hi = mid - 1
      }
    }
    return found < 0 ? { relativeOffset: -1, position: 0 } : this.#entryAt(found)
  }

  /** Remove entries with relative offset >= `relativeOffset` (truncation). */
  truncateToOffset(relativeOffset: number): void {
    let n = this.#entries
    while (n > 0 && this.#buf.readInt32BE((n - 1) * OFFSET_INDEX_ENTRY_BYTES) >= relativeOffset) n--
    this.#entries = n
  }

  /** Remove entries whose position is >= `position` (truncation by bytes). */
  truncateToPosition(position: number): void {
    let n = this.#entries
    while (n > 0 && this.#buf.readInt32BE((n - 1) * OFFSET_INDEX_ENTRY_BYTES + 4) >= position) n--
    this.#entries = n
  }

  /** Remove every entry. */
  reset(): void {
    this.#entries = 0
  }

  /** The entries as file bytes (a view, valid until the next append). */
  bytes(): Buffer {
    return this.#buf.subarray(0, this.#entries * OFFSET_INDEX_ENTRY_BYTES)
  }
}

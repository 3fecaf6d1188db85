/**
 * A segment's sparse time index, Kafka's `.timeindex` format: 12-byte entries (timestamp int64 ms,
 * relative offset int32), timestamps strictly increasing. Maps a time to where a search starts.
 */
import { assert } from '../model/index.ts'
import { readInt64AsNumber } from './scan-append.ts'

/** Bytes per entry: timestamp (int64) + relative offset (int32). */
export const TIME_INDEX_ENTRY_BYTES = 12

export interface TimestampOffset {
  /** Milliseconds since the epoch (Kafka timestamp). */
  readonly timestampMs: number
  /** Offset relative to the segment's base offset. */
  readonly relativeOffset: number
}

/** The time index of one segment. Bounded: at most `entriesMax` entries. */
export class TimeIndex {
  readonly entriesMax: number
  #buf: Buffer
  #entries = 0

  constructor(indexBytesMax: number) {
    this.entriesMax = Math.floor(indexBytesMax / TIME_INDEX_ENTRY_BYTES)
    assert(this.entriesMax >= 1, 'time index must hold at least one entry')
    this.#buf = Buffer.alloc(Math.min(this.entriesMax, 8) * TIME_INDEX_ENTRY_BYTES)
  }

  /**
   * Load a time index file's bytes, or null when they are not sane: a partial entry, timestamps not
   * strictly increasing, relative offsets decreasing or negative.
   */
  static fromBytes(bytes: Buffer, indexBytesMax: number): TimeIndex | null {
    if (bytes.length % TIME_INDEX_ENTRY_BYTES !== 0) return null
    const index = new TimeIndex(Math.max(indexBytesMax, bytes.length))
    let lastTs = Number.NEGATIVE_INFINITY
    let lastRel = -1
    for (let at = 0; at < bytes.length; at += TIME_INDEX_ENTRY_BYTES) {
      const ts = Number(bytes.readBigInt64BE(at))
      const rel = bytes.readInt32BE(at + 8)
      if (ts <= lastTs || rel < lastRel || rel < 0) return null
      lastTs = ts
      lastRel = rel
      index.#push(ts, rel)
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
  get lastEntry(): TimestampOffset | null {
    if (this.#entries === 0) return null
    return this.#entryAt(this.#entries - 1)
  }

  #entryAt(i: number): TimestampOffset {
    const at = i * TIME_INDEX_ENTRY_BYTES
    return {
      timestampMs: readInt64AsNumber(this.#buf, at),
      relativeOffset: this.#buf.readInt32BE(at + 8),
    }
  }

  /**
   * Add (timestampMs, relativeOffset) if `timestampMs` is larger than the last entry's, as Kafka's
   * `maybeAppend`; returns whether it was added. `closing`: the final entry a segment writes as it
   * becomes inactive, allowed one past `entriesMax` (a full index rolls the segment first).
   */
  maybeAppend(timestampMs: number, relativeOffset: number, closing = false): boolean {
    const n = this.#entries
    if (n > 0 && timestampMs <= this.#lastTimestampMs) return false
    if (timestampMs < 0) return false
    assert(closing ? n <= this.entriesMax : !this.isFull, 'time index is full')
    assert(
      n === 0 || relativeOffset >= this.#buf.readInt32BE((n - 1) * TIME_INDEX_ENTRY_BYTES + 8),
      'time index offsets must not decrease',
    )
    this.#push(timestampMs, relativeOffset)
    return true
  }

  /** The last entry's timestamp; the index must not be empty. */
  get #lastTimestampMs(): number {
    return readInt64AsNumber(this.#buf, (this.#entries - 1) * TIME_INDEX_ENTRY_BYTES)
  }

  #push(timestampMs: number, relativeOffset: number): void {
    const at = this.#entries * TIME_INDEX_ENTRY_BYTES
    if (at + TIME_INDEX_ENTRY_BYTES > this.#buf.length) {
      const grown = Buffer.alloc(
        Math.min(this.#buf.length * 2, (this.entriesMax + 1) * TIME_INDEX_ENTRY_BYTES),
      )
      this.#buf.copy(grown)
      this.#buf = grown
    }
    // An int64 as two int32 halves (no BigInt on the append path); exact below 2^53.
    const high = Math.floor(timestampMs / 0x100000000)
    this.#buf.writeInt32BE(high, at)
    this.#buf.writeUInt32BE(timestampMs - high * 0x100000000, at + 4)
    this.#buf.writeInt32BE(relativeOffset, at + 8)
    this.#entries++
  }

  /**
   * The entry with the largest timestamp <= `timestampMs`, or null when every entry is later (the
   * search then starts at the segment's beginning).
   */
  lookup(timestampMs: number): TimestampOffset | null {
    let lo = 0
    let hi = this.#entries - 1
    let found = -1
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1
      if (readInt64AsNumber(this.#buf, mid * TIME_INDEX_ENTRY_BYTES) <= timestampMs) {
        found = mid
        lo = mid + 1
      } else {
        hi = mid - 1
      }
    }
    return found < 0 ? null : this.#entryAt(found)
  }

  /** Remove entries with relative offset >= `relativeOffset` (truncation). */
  truncateToOffset(relativeOffset: number): void {
    let n = this.#entries
    while (n > 0 && this.#buf.readInt32BE((n - 1) * TIME_INDEX_ENTRY_BYTES + 8) >= relativeOffset) n--
    this.#entries = n
  }

  reset(): void {
    this.#entries = 0
  }

  /** The entries as file bytes (a view, valid until the next append). */
  bytes(): Buffer {
    return this.#buf.subarray(0, this.#entries * TIME_INDEX_ENTRY_BYTES)
  }
}

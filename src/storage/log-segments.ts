/**
 * A log's segments in base-offset order (Kafka's LogSegments): lookup by offset, the active one,
 * sizes, and the changes a log makes (roll, truncation, retention, a compaction's swap). The array
 * is replaced on every change, never mutated, so a reader holding it keeps a consistent snapshot.
 */
import { assert } from '../model/index.ts'
import type { LogSegment } from './log-segment.ts'

export class LogSegments {
  #list: readonly LogSegment[] = []

  /** Oldest first (a snapshot: never mutated). */
  get all(): readonly LogSegment[] {
    return this.#list
  }

  get length(): number {
    return this.#list.length
  }

  /** The newest segment, the one appended to (undefined only while a truncation replaces them all). */
  get active(): LogSegment {
    return this.#list[this.#list.length - 1]!
  }

  get first(): LogSegment {
    return this.#list[0]!
  }

  /** Bytes in all segments. */
  get sizeBytes(): number {
    let n = 0
    for (const s of this.#list) n += s.size
    return n
  }

  includes(segment: LogSegment): boolean {
    return this.#list.includes(segment)
  }

  /** Index of the segment with the largest base offset <= `offset`, or -1. */
  floorIndex(offset: bigint): number {
    const segments = this.#list
    let lo = 0
    let hi = segments.length - 1
    let found = -1
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1
      if (segments[mid]!.baseOffset <= offset) {
        found = mid
        lo = mid + 1
      } else {
        hi = mid - 1
      }
    }
    return found
  }

  /** Where `run` (contiguous segments) starts, when it is still there and not the active tail; else -1. */
  indexOfClosedRun(run: readonly LogSegment[]): number {
    const segments = this.#list
    const at = segments.indexOf(run[0]!)
    const there = at >= 0 && run.every((s, i) => segments[at + i] === s) && at + run.length < segments.length
    return there ? at : -1
  }

  /** Replace them all (a load, a full truncation); `list` in increasing base-offset order. */
  reset(list: readonly LogSegment[]): void {
    for (let i = 1; i < list.length; i++) {
      assert(list[i - 1]!.baseOffset < list[i]!.baseOffset, 'segments are in increasing base-offset order')
    }
    this.#list = list
  }

  /** Remove them all (a full truncation, before the new segment exists); returns them. */
  clear(): readonly LogSegment[] {
    const all = this.#list
    this.#list = []
    return all
  }

  /** A roll: `segment` becomes the active one, after the active one or, with `replaceActive`, in its place. */
  roll(segment: LogSegment, replaceActive: boolean): void {
    const kept = replaceActive ? this.#list.slice(0, -1) : this.#list
    const last = kept[kept.length - 1]
    assert(
      last === undefined || last.baseOffset < segment.baseOffset,
      'a new segment starts past the last one',
    )
    this.#list = [...kept, segment]
  }

  /** Remove the segments whose base offset is above `offset` (a truncation); returns them. */
  removeAbove(offset: bigint): LogSegment[] {
    const doomed = this.#list.filter((s) => s.baseOffset > offset)
    this.#list = this.#list.filter((s) => s.baseOffset <= offset)
    return doomed
  }

  /** Remove the `count` oldest segments (retention); returns them. */
  removeOldest(count: number): readonly LogSegment[] {
    assert(count < this.#list.length, 'retention never removes the active segment')
    const doomed = this.#list.slice(0, count)
    this.#list = this.#list.slice(count)
    return doomed
  }

  /** Put `cleaned` in place of the `count` segments from `at` (a compaction's swap). */
  swap(at: number, count: number, cleaned: LogSegment): void {
    const segments = this.#list
    const before = segments[at - 1]
    const after = segments[at + count]
    assert(
      (before === undefined || before.baseOffset < cleaned.baseOffset) &&
        (after === undefined || cleaned.baseOffset < after.baseOffset),
      'a cleaned segment keeps the base-offset order',
    )
    this.#list = [...segments.slice(0, at), cleaned, ...segments.slice(at + count)]
  }
}

/**
 * The core's in-memory view of the replicated log: the entries after the latest snapshot and an
 * index of where each epoch starts. It answers Fetch validation and divergence; it does no I/O.
 */
import { assert, type Offset } from '../model/index.ts'
import {
  EMPTY_SNAPSHOT_ID,
  type Entry,
  type EpochEndOffset,
  entrySizeBytes,
  type SnapshotId,
} from './entry.ts'

interface EpochStart {
  readonly epoch: number
  readonly startOffset: Offset
}

/**
 * Entries `[startOffset, endOffset)` where `startOffset` is the latest snapshot's end offset. Memory
 * is bounded by taking snapshots: `compactTo` forgets the prefix a snapshot covers.
 *
 * Invariants (asserted): offsets are contiguous; epochs never decrease along the log; the epoch
 * index has one element per run of equal epochs, in order.
 */
export class RaftLog {
  #snapshotId: SnapshotId
  #entries: Entry[] = []
  #epochs: EpochStart[] = []

  /** A log holding `entries` after `snapshotId` (what the shell recovered from disk). */
  constructor(snapshotId: SnapshotId = EMPTY_SNAPSHOT_ID, entries: readonly Entry[] = []) {
    assert(snapshotId.endOffset >= 0n && snapshotId.epoch >= 0, 'RaftLog: bad snapshot id')
    this.#snapshotId = snapshotId
    this.append(entries)
  }

  /** The latest snapshot's id; `startOffset` is its end offset. */
  get snapshotId(): SnapshotId {
    return this.#snapshotId
  }

  /** Kafka's log start offset: the first offset this log holds (or would hold). */
  get startOffset(): Offset {
    return this.#snapshotId.endOffset
  }

  /** Kafka's log end offset: the offset the next entry gets. */
  get endOffset(): Offset {
    return this.#snapshotId.endOffset + BigInt(this.#entries.length)
  }

  get entryCount(): number {
    return this.#entries.length
  }

  /** The epoch of the last entry, or of the snapshot when the log after it is empty. */
  get lastEpoch(): number {
    return this.#entries.at(-1)?.epoch ?? this.#snapshotId.epoch
  }

  /** The log's end as (epoch, offset): what a candidate sends and a voter compares (KIP-595). */
  get lastEpochEndOffset(): EpochEndOffset {
    return { epoch: this.lastEpoch, endOffset: this.endOffset }
  }

  /** The entry at `offset`, or undefined outside `[startOffset, endOffset)`. */
  entryAt(offset: Offset): Entry | undefined {
    if (offset < this.startOffset) return undefined
    return this.#entries[Number(offset - this.startOffset)]
  }

  /**
   * The epoch of the entry at `offset`, counting the snapshot's last record at `startOffset - 1`;
   * undefined elsewhere.
   */
  epochAt(offset: Offset): number | undefined {
    if (offset === this.startOffset - 1n && this.startOffset > 0n) return this.#snapshotId.epoch
    return this.entryAt(offset)?.epoch
  }

  /**
   * Entries from `from` (inclusive) to `to` (exclusive), at most `countMax` of them and stopping once
   * `bytesMax` is reached (the first entry is always included, as KIP-74 does for fetch).
   */
  slice(from: Offset, to: Offset, countMax: number, bytesMax = Number.POSITIVE_INFINITY): Entry[] {
    assert(from >= this.startOffset && to <= this.endOffset, 'RaftLog.slice: out of range')
    const out: Entry[] = []
    let bytes = 0
    for (let offset = from; offset < to && out.length < countMax; offset++) {
      const entry = this.#entries[Number(offset - this.startOffset)]!
      const size = entrySizeBytes(entry)
      if (out.length > 0 && bytes + size > bytesMax) break
      bytes += size
      out.push(entry)
    }
    return out
  }

  /** Append entries at the end. They must continue the offsets and never lower the epoch. */
  append(entries: readonly Entry[]): void {
    for (const entry of entries) {
      assert(
        entry.offset === this.endOffset,
        `RaftLog.append: offset ${entry.offset} is not the end offset ${this.endOffset}`,
      )
      const lastEpoch = this.lastEpoch
      assert(entry.epoch >= lastEpoch, `RaftLog.append: epoch ${entry.epoch} below ${lastEpoch}`)
      if (entry.epoch !== this.#epochs.at(-1)?.epoch) {
        this.#epochs.push({ epoch: entry.epoch, startOffset: entry.offset })
      }
      this.#entries.push(entry)
    }
  }

  /** Remove every entry at or after `offset` (`offset` >= `startOffset`); a no-op past the end. */
  truncateTo(offset: Offset): void {
    assert(offset >= this.startOffset, `RaftLog.truncateTo: ${offset} is below the log start`)
    if (offset >= this.endOffset) return
    this.#entries.length = Number(offset - this.startOffset)
    while (this.#epochs.length > 0 && this.#epochs.at(-1)!.startOffset >= offset) this.#epochs.pop()
  }

  /**
   * Forget entries below `snapshotId.endOffset`, which a snapshot now covers. The snapshot must end
   * inside this log (or at its end) and agree with it on the epoch of its last record.
   */
  compactTo(snapshotId: SnapshotId): void {
    const end = snapshotId.endOffset
    assert(end > this.startOffset && end <= this.endOffset, 'RaftLog.compactTo: snapshot outside the log')
    assert(this.epochAt(end - 1n) === snapshotId.epoch, 'RaftLog.compactTo: snapshot epoch differs from log')
    this.#entries = this.#entries.slice(Number(end - this.startOffset))
    this.#snapshotId = snapshotId
    while (this.#epochs.length > 0 && this.#epochs[0]!.startOffset < end) {
      const first = this.#epochs.shift()!
      const next = this.#epochs[0]
      // Keep the run that continues past the snapshot, starting at its new first offset.
      if ((next === undefined || next.startOffset > end) && this.#entries.length > 0) {
        this.#epochs.unshift({ epoch: first.epoch, startOffset: end })
        break
      }
    }
  }

  /** Replace the whole log by a snapshot received from the leader (FetchSnapshot, KIP-630). */
  installSnapshot(snapshotId: SnapshotId): void {
    this.#entries = []
    this.#epochs = []
    this.#snapshotId = snapshotId
  }

  /**
   * KIP-595's end offset for `epoch`: the largest epoch in this log that is <= `epoch`, and the
   * offset where it ends (where the next epoch starts, or the log end). The snapshot counts as a run
   * of `snapshotId.epoch` ending at `startOffset`. Undefined when `epoch` is older than anything this
   * log knows (below the snapshot): the caller must fall back to the snapshot.
   *
   * Example: entries epochs [1, 1, 3, 3] at offsets 0..3: `endOffsetForEpoch(2)` is
   * `{ epoch: 1, endOffset: 2n }`, `endOffsetForEpoch(3)` is `{ epoch: 3, endOffset: 4n }`.
   */
  endOffsetForEpoch(epoch: number): EpochEndOffset | undefined {
    const epochs = this.#epochs
    for (let i = epochs.length - 1; i >= 0; i--) {
      const run = epochs[i]!
      if (run.epoch <= epoch) {
        return { epoch: run.epoch, endOffset: epochs[i + 1]?.startOffset ?? this.endOffset }
      }
    }
    if (epoch >= this.#snapshotId.epoch) {
      return { epoch: this.#snapshotId.epoch, endOffset: this.startOffset }
    }
    return undefined
  }
}

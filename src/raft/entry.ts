/** Entries of the replicated log and the ids that name positions in it; plain data, no behaviour. */
import type { NodeId, Offset } from '../model/index.ts'

/** A metadata record appended by the leader's state machine; `data` is opaque to raft. */
export interface DataEntry {
  readonly kind: 'data'
  readonly offset: Offset
  /** The epoch of the leader that appended it (KIP-595: the batch's partition leader epoch). */
  readonly epoch: number
  readonly data: Uint8Array
}

/**
 * The control record a new leader appends first in its epoch, as KRaft's LeaderChangeMessage
 * (KIP-595). The shell encodes it as a control batch; the state machine sees it in `committed` and
 * may skip it. Committing it is what lets the high watermark move in the new epoch.
 */
export interface LeaderChangeEntry {
  readonly kind: 'leaderChange'
  readonly offset: Offset
  readonly epoch: number
  readonly leaderId: NodeId
  readonly voters: readonly NodeId[]
  readonly grantingVoters: readonly NodeId[]
}

export type Entry = DataEntry | LeaderChangeEntry

/**
 * A snapshot's name, as Kafka's SnapshotId: it holds every record below `endOffset`, and `epoch` is
 * the epoch of the record at `endOffset - 1`. The empty log is `{ endOffset: 0n, epoch: 0 }`.
 */
export interface SnapshotId {
  readonly endOffset: Offset
  readonly epoch: number
}

/** A snapshot with its bytes (opaque to raft: the state machine's image at `id.endOffset`). */
export interface Snapshot {
  readonly id: SnapshotId
  readonly bytes: Uint8Array
}

/** An epoch and the end offset of that epoch in some log (Kafka's OffsetAndEpoch / EpochEndOffset). */
export interface EpochEndOffset {
  readonly epoch: number
  readonly endOffset: Offset
}

export const EMPTY_SNAPSHOT_ID: SnapshotId = { endOffset: 0n, epoch: 0 }

/** Rough wire size of an entry, for `maxBytes` accounting: its data plus a record's overhead. */
export const ENTRY_OVERHEAD_BYTES = 16

export function entrySizeBytes(entry: Entry): number {
  return entry.kind === 'data'
    ? entry.data.length + ENTRY_OVERHEAD_BYTES
    : ENTRY_OVERHEAD_BYTES + 4 * (entry.voters.length + entry.grantingVoters.length)
}

/** Compare two log positions by (epoch, offset), as KIP-595 compares a candidate's log with a voter's. */
export function compareEpochOffset(a: EpochEndOffset, b: EpochEndOffset): number {
  if (a.epoch !== b.epoch) return a.epoch < b.epoch ? -1 : 1
  return a.endOffset < b.endOffset ? -1 : a.endOffset > b.endOffset ? 1 : 0
}

/** The smaller of two offsets (`Math.min` takes no bigint). */
export function offsetMin(a: Offset, b: Offset): Offset {
  return a < b ? a : b
}

/** The larger of two offsets. */
export function offsetMax(a: Offset, b: Offset): Offset {
  return a > b ? a : b
}

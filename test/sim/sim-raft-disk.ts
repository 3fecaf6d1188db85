/**
 * A simulated disk for one raft node: the quorum-state file and the log (with its snapshot), each
 * with synced and unsynced writes. A crash keeps what was synced plus a random prefix of each
 * file's unsynced writes, as a real disk may.
 */
import type { Entry, PersistedRaftState, PersistentState, Ready, Snapshot } from '../../src/raft/index.ts'

type LogOp =
  | { readonly kind: 'snapshot'; readonly snapshot: Snapshot }
  | { readonly kind: 'truncate'; readonly offset: bigint }
  | { readonly kind: 'append'; readonly entries: readonly Entry[] }

interface Files {
  state: PersistentState | undefined
  snapshot: Snapshot | undefined
  entries: Entry[]
}

export class SimRaftDisk {
  #synced: Files = { state: undefined, snapshot: undefined, entries: [] }
  #pendingState: PersistentState[] = []
  #pendingLog: LogOp[] = []
  /** Writes lost to crashes, for the run's statistics. */
  lostWrites = 0

  /** Write a Ready's durable parts, unsynced, in the order the Ready contract gives. */
  write(ready: Ready): void {
    if (ready.snapshot !== undefined) this.#pendingLog.push({ kind: 'snapshot', snapshot: ready.snapshot })
    if (ready.truncateTo !== undefined) this.#pendingLog.push({ kind: 'truncate', offset: ready.truncateTo })
    if (ready.entries.length > 0) this.#pendingLog.push({ kind: 'append', entries: ready.entries })
    if (ready.state !== undefined) this.#pendingState.push(ready.state)
  }

  /** fsync both files. */
  sync(): void {
    for (const op of this.#pendingLog) applyLogOp(this.#synced, op)
    const state = this.#pendingState.at(-1)
    if (state !== undefined) this.#synced.state = state
    this.#pendingLog = []
    this.#pendingState = []
  }

  /**
   * A snapshot the node's state machine took: written and synced at once (the shell does so before
   * telling raft), and the log below it dropped.
   */
  saveSnapshot(snapshot: Snapshot): void {
    const synced = this.#synced
    if (synced.snapshot !== undefined && synced.snapshot.id.endOffset >= snapshot.id.endOffset) return
    synced.snapshot = snapshot
    synced.entries = synced.entries.filter((e) => e.offset >= snapshot.id.endOffset)
  }

  /** Power loss: each file keeps its synced content and a prefix of its unsynced writes. */
  crash(keep: (pending: number) => number): void {
    const keptLog = keep(this.#pendingLog.length)
    const keptState = keep(this.#pendingState.length)
    this.lostWrites += this.#pendingLog.length - keptLog + this.#pendingState.length - keptState
    for (const op of this.#pendingLog.slice(0, keptLog)) applyLogOp(this.#synced, op)
    const state = this.#pendingState[keptState - 1]
    if (state !== undefined) this.#synced.state = state
    this.#pendingLog = []
    this.#pendingState = []
  }

  /** What a restarting shell reads back. */
  recover(): PersistedRaftState {
    const { state, snapshot, entries } = this.#synced
    const start = snapshot?.id.endOffset ?? 0n
    return {
      ...(state !== undefined ? { state } : {}),
      ...(snapshot !== undefined ? { snapshot } : {}),
      entries: entries.filter((e) => e.offset >= start),
    }
  }

  /** The durable quorum state. */
  get syncedState(): PersistentState | undefined {
    return this.#synced.state
  }

  /** The durable log end offset. */
  get syncedEndOffset(): bigint {
    const { snapshot, entries } = this.#synced
    return entries.length > 0 ? entries.at(-1)!.offset + 1n : (snapshot?.id.endOffset ?? 0n)
  }

  /**
   * The epoch of the durable record at `offset`: from the log, or from the snapshot for its last
   * offset; 'snapshot' below that (covered, epoch unknown); undefined if not durable here.
   */
  syncedEpochAt(offset: bigint): number | 'snapshot' | undefined {
    const { snapshot, entries } = this.#synced
    const snapshotEnd = snapshot?.id.endOffset ?? 0n
    if (offset < 0n) return 'snapshot'
    if (offset === snapshotEnd - 1n) return snapshot!.id.epoch
    if (offset < snapshotEnd) return 'snapshot'
    const first = entries[0]
    if (first === undefined || offset < first.offset) return undefined
    return entries[Number(offset - first.offset)]?.epoch
  }
}

function applyLogOp(files: Files, op: LogOp): void {
  switch (op.kind) {
    case 'snapshot':
      files.snapshot = op.snapshot
      files.entries = []
      return
    case 'truncate':
      files.entries = files.entries.filter((e) => e.offset < op.offset)
      return
    case 'append': {
      const end = files.entries.at(-1)?.offset
      const expected = end === undefined ? (files.snapshot?.id.endOffset ?? 0n) : end + 1n
      if (op.entries[0]!.offset !== expected) {
        throw new Error(`sim disk: append at ${op.entries[0]!.offset}, log ends at ${expected}`)
      }
      files.entries.push(...op.entries)
      return
    }
  }
}

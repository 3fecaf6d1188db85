/**
 * A partition's leader-epoch cache, as Kafka's LeaderEpochFileCache: which leader epoch wrote from
 * which offset, so OffsetForLeaderEpoch can answer where an epoch ended (followers truncate and
 * consumers validate their position by it). Pure; `formatLeaderEpochCheckpoint` gives the file text.
 */

/** Kafka's UNDEFINED_EPOCH and UNDEFINED_EPOCH_OFFSET. */
export const UNDEFINED_EPOCH = -1
export const UNDEFINED_EPOCH_OFFSET = -1n
/** The partition directory's file, in Kafka's name and format. */
export const LEADER_EPOCH_CHECKPOINT_FILE = 'leader-epoch-checkpoint'
const CHECKPOINT_VERSION = 0
/**
 * Entries kept at most. Each is one leader change of this partition; Kafka keeps them all, but a
 * bound is needed and the oldest matter least (they are below what retention keeps).
 */
export const EPOCH_ENTRIES_MAX = 10_000

export interface EpochEntry {
  readonly epoch: number
  readonly startOffset: bigint
}

export class LeaderEpochCheckpointError extends Error {
  override name = 'LeaderEpochCheckpointError'
}

export class LeaderEpochCache {
  /** Ascending by epoch and by start offset (both strictly). */
  #entries: EpochEntry[] = []

  constructor(entries: readonly EpochEntry[] = []) {
    for (const e of entries) this.assign(e.epoch, e.startOffset)
  }

  get entries(): readonly EpochEntry[] {
    return this.#entries
  }

  get latestEpoch(): number {
    return this.#entries.at(-1)?.epoch ?? UNDEFINED_EPOCH
  }

  get latestEntry(): EpochEntry | undefined {
    return this.#entries.at(-1)
  }

  /**
   * Records that `epoch` starts at `startOffset` (Kafka's `assign`): a no-op when it is the latest
   * epoch already and starts no earlier; otherwise entries that are not below it in both epoch and
   * offset are dropped first, so the cache stays monotonic. Returns whether anything changed.
   */
  assign(epoch: number, startOffset: bigint): boolean {
    if (epoch < 0 || startOffset < 0n) return false
    const latest = this.#entries.at(-1)
    if (latest !== undefined && latest.epoch === epoch && startOffset >= latest.startOffset) return false
    while (this.#entries.length > 0) {
      const last = this.#entries.at(-1)!
      if (last.epoch >= epoch || last.startOffset >= startOffset) this.#entries.pop()
      else break
    }
    this.#entries.push({ epoch, startOffset })
    if (this.#entries.length > EPOCH_ENTRIES_MAX) this.#entries.shift()
    return true
  }

  /**
   * Assigns only an epoch newer than every one known (what log recovery does for each batch it
   * scans, so replaying older batches never rewrites history). Returns whether anything changed.
   */
  assignIfNewer(epoch: number, startOffset: bigint): boolean {
    if (epoch <= this.latestEpoch) return false
    return this.assign(epoch, startOffset)
  }

  /**
   * The epoch at or below `requestedEpoch` and the offset where it ended (Kafka's `endOffsetFor`):
   * the latest epoch ends at the log end offset; an earlier one ends where the next known epoch
   * starts; an epoch below every known one answers the first known start; unknown: (-1, -1).
   */
  endOffsetFor(requestedEpoch: number, logEndOffset: bigint): { epoch: number; endOffset: bigint } {
    const undefinedResult = { epoch: UNDEFINED_EPOCH, endOffset: UNDEFINED_EPOCH_OFFSET }
    if (requestedEpoch === UNDEFINED_EPOCH) return undefinedResult
    const latest = this.#entries.at(-1)
    if (latest !== undefined && latest.epoch === requestedEpoch) {
      return { epoch: requestedEpoch, endOffset: logEndOffset }
    }
    const higher = this.#entries.findIndex((e) => e.epoch > requestedEpoch)
    if (higher < 0) return undefinedResult
    const next = this.#entries[higher]!
    if (higher === 0) return { epoch: requestedEpoch, endOffset: next.startOffset }
    return { epoch: this.#entries[higher - 1]!.epoch, endOffset: next.startOffset }
  }

  /** The epoch of the batch holding `offset` (the latest entry starting at or before it), or -1. */
  epochForOffset(offset: bigint): number {
    let found = UNDEFINED_EPOCH
    for (const e of this.#entries) {
      if (e.startOffset <= offset) found = e.epoch
      else break
    }
    return found
  }

  /** Drops entries starting at or after `endOffset` (the log was truncated there). */
  truncateFromEnd(endOffset: bigint): boolean {
    const before = this.#entries.length
    while (this.#entries.length > 0 && this.#entries.at(-1)!.startOffset >= endOffset) this.#entries.pop()
    return this.#entries.length !== before
  }

  /**
   * The log now starts at `startOffset` (retention, DeleteRecords): entries wholly below it go,
   * and the one it falls in starts there instead (Kafka's `truncateFromStart`).
   */
  truncateFromStart(startOffset: bigint): boolean {
    let lastBelow = -1
    for (let i = 0; i < this.#entries.length && this.#entries[i]!.startOffset <= startOffset; i++)
      lastBelow = i
    if (lastBelow < 0) return false
    const kept = this.#entries[lastBelow]!
    if (lastBelow === 0 && kept.startOffset === startOffset) return false
    this.#entries = [{ epoch: kept.epoch, startOffset }, ...this.#entries.slice(lastBelow + 1)]
    return true
  }

  clear(): boolean {
    const had = this.#entries.length > 0
    this.#entries = []
    return had
  }
}

/** Kafka's checkpoint text: the version line, the count line, then `epoch startOffset` lines. */
export function formatLeaderEpochCheckpoint(entries: readonly EpochEntry[]): string {
  return `${CHECKPOINT_VERSION}\n${entries.length}\n${entries.map((e) => `${e.epoch} ${e.startOffset}\n`).join('')}`
}

export function parseLeaderEpochCheckpoint(text: string): EpochEntry[] {
  const lines = text.split('\n')
  if (lines.at(-1) === '') lines.pop()
  if (lines.length < 2) throw new LeaderEpochCheckpointError('leader-epoch-checkpoint is too short')
  if (lines[0] !== String(CHECKPOINT_VERSION))
    throw new LeaderEpochCheckpointError(`unknown leader-epoch-checkpoint version ${lines[0]}`)
  const count = Number(lines[1])
  if (!Number.isInteger(count) || count < 0 || count !== lines.length - 2)
    throw new LeaderEpochCheckpointError(`leader-epoch-checkpoint count ${lines[1]} does not match its lines`)
  const out: EpochEntry[] = []
  for (const line of lines.slice(2)) {
    const m = /^(\d+) (\d+)$/.exec(line)
    if (m === null) throw new LeaderEpochCheckpointError(`malformed leader-epoch-checkpoint line '${line}'`)
    out.push({ epoch: Number(m[1]), startOffset: BigInt(m[2]!) })
  }
  return out
}

/**
 * Kafka's `replication-offset-checkpoint` per log directory (ReplicaManager's
 * `highWatermarkCheckpoints`): read once at start, written with every hosted partition's high
 * watermark, one write at a time.
 */
import { type Disk, joinPath } from '../io/index.ts'
import {
  type LogManager,
  type OffsetCheckpoint,
  partitionKey,
  readOffsetCheckpoint,
  writeOffsetCheckpoint,
} from '../storage/index.ts'
import type { Partition } from './partition.ts'

/** Kafka's per-directory high-watermark checkpoint. */
export const REPLICATION_OFFSET_CHECKPOINT_FILE = 'replication-offset-checkpoint'

export interface HighWatermarkCheckpointsOptions {
  readonly disk: Disk
  /** The hosted partition of that topic and partition, or undefined. */
  readonly hosted: (topic: string, partition: number) => Partition | undefined
  /** A failed write is its directory's failure (it goes offline). */
  readonly failLogDir: (e: unknown) => void
  readonly log: (level: 'info' | 'warn' | 'error', message: string) => void
}

export class HighWatermarkCheckpoints {
  readonly #o: HighWatermarkCheckpointsOptions
  /** Each log directory's replication-offset-checkpoint as read at start. */
  readonly #read = new Map<string, OffsetCheckpoint>()
  /** Serializes writes of the replication-offset-checkpoint files. */
  #tail: Promise<void> = Promise.resolve()

  constructor(options: HighWatermarkCheckpointsOptions) {
    this.#o = options
  }

  async read(managers: readonly LogManager[]): Promise<void> {
    for (const m of managers) {
      const path = joinPath(m.dir, REPLICATION_OFFSET_CHECKPOINT_FILE)
      try {
        this.#read.set(m.dir, await readOffsetCheckpoint(this.#o.disk, path))
      } catch (e) {
        // A damaged checkpoint costs the high watermark (it restarts at the log start), never data.
        this.#o.log('warn', `${path}: ${(e as Error).message}; high watermarks start at the log start`)
      }
    }
  }

  /** The high watermark `dir`'s checkpoint held for partition `key` at start (or as clamped since). */
  checkpointed(dir: string, key: string): bigint | undefined {
    return this.#read.get(dir)?.get(key)?.offset
  }

  /**
   * Writes every directory's `replication-offset-checkpoint` (Kafka's format) durably: each hosted
   * partition's high watermark, and for a log not adopted yet the value read at start (clamped to
   * its log end once known), so a restart before it is adopted still finds it.
   */
  write(managers: () => readonly LogManager[]): Promise<void> {
    const run = this.#tail.then(async () => {
      for (const m of managers()) {
        try {
          await this.#writeDir(m)
        } catch (e) {
          this.#writeFailed(m, e)
        }
      }
    })
    this.#tail = run.catch(() => undefined)
    return run
  }

  #writeFailed(m: LogManager, e: unknown): void {
    this.#o.log(
      'warn',
      `${m.dir}: writing ${REPLICATION_OFFSET_CHECKPOINT_FILE} failed: ${(e as Error).message}`,
    )
    this.#o.failLogDir(e)
  }

  async #writeDir(m: LogManager): Promise<void> {
    // An offline directory's file stays as it was: its partitions' offsets are not to be trusted.
    if (m.isOffline) return
    const read = this.#read.get(m.dir)
    const entries: Array<{ topic: string; partition: number; offset: bigint }> = []
    for (const h of m.logs()) {
      const p = this.#o.hosted(h.topic, h.partition)
      if (p !== undefined && p.log === h.log)
        entries.push({ topic: h.topic, partition: h.partition, offset: p.highWatermark })
      else {
        const was = read?.get(partitionKey(h.topic, h.partition))
        if (was !== undefined) entries.push(was)
      }
    }
    await writeOffsetCheckpoint(this.#o.disk, joinPath(m.dir, REPLICATION_OFFSET_CHECKPOINT_FILE), entries)
  }

  /**
   * A checkpointed high watermark past the log end (the log lost its tail to a crash) is rewritten
   * as the log end durably before the partition takes any write: else the appends of a new history
   * would sit below a stale high watermark after the next restart, claimed committed though no ISR
   * ever held them (cluster simulation seed 3361).
   */
  async clamp(m: LogManager, key: string, logEndOffset: bigint): Promise<void> {
    const read = this.#read.get(m.dir)
    const was = read?.get(key)
    if (read === undefined || was === undefined || was.offset <= logEndOffset) return
    this.#o.log(
      'info',
      `partition ${key}: checkpointed high watermark ${was.offset} past the log end ${logEndOffset}`,
    )
    read.set(key, { ...was, offset: logEndOffset })
    const run = this.#tail.then(() => this.#writeDir(m))
    this.#tail = run.catch(() => undefined)
    // A failed write is the directory's failure (it goes offline); the partition opens regardless.
    await run.catch((e: unknown) => this.#writeFailed(m, e))
  }
}

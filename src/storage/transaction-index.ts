/**
 * A segment's aborted-transaction index, Kafka's `.txnindex` format: 34-byte AbortedTxn entries
 * (version int16 = 0, producer id int64, first offset int64, last offset int64, last stable offset
 * int64), last offsets strictly increasing. A fetch of read_committed consumers takes from it the
 * aborted transactions overlapping what it returns. The entries are kept in memory (aborts are rare)
 * and written through to the file, which exists once the first entry is appended, as Kafka's.
 */
import { type Disk, type DiskFile, isNotFound } from '../io/index.ts'

/** Bytes per entry. */
export const ABORTED_TXN_BYTES = 34
/** The only entry version. */
export const ABORTED_TXN_VERSION = 0
/** The file name suffix after the segment's 20-digit base offset. */
export const TRANSACTION_INDEX_SUFFIX = '.txnindex'

export interface AbortedTxn {
  readonly producerId: bigint
  /** The offset of the transaction's first batch in this partition. */
  readonly firstOffset: bigint
  /** The offset of its abort marker. */
  readonly lastOffset: bigint
  /** The partition's last stable offset once the marker was written. */
  readonly lastStableOffset: bigint
}

/** A `.txnindex` whose entries Kafka would refuse too (CorruptIndexException): rebuild it from the log. */
export class CorruptTransactionIndexError extends Error {
  override name = 'CorruptTransactionIndexError'
}

export interface AbortedTxnSearch {
  /** The aborted transactions with `lastOffset >= fetchOffset` and `firstOffset < upperBoundOffset`. */
  readonly abortedTransactions: AbortedTxn[]
  /** True when an entry's last stable offset reached the bound: later segments need no search. */
  readonly isComplete: boolean
}

export function encodeAbortedTxn(txn: AbortedTxn): Buffer {
  const b = Buffer.alloc(ABORTED_TXN_BYTES)
  b.writeInt16BE(ABORTED_TXN_VERSION, 0)
  b.writeBigInt64BE(txn.producerId, 2)
  b.writeBigInt64BE(txn.firstOffset, 10)
  b.writeBigInt64BE(txn.lastOffset, 18)
  b.writeBigInt64BE(txn.lastStableOffset, 26)
  return b
}

/** The index of one segment, starting at its base offset `startOffset`. One writer. */
export class TransactionIndex {
  readonly path: string
  readonly startOffset: bigint
  readonly #disk: Disk
  #file: DiskFile | null
  #entries: AbortedTxn[]

  private constructor(
    disk: Disk,
    path: string,
    startOffset: bigint,
    file: DiskFile | null,
    entries: AbortedTxn[],
  ) {
    this.#disk = disk
    this.path = path
    this.startOffset = startOffset
    this.#file = file
    this.#entries = entries
  }

  /**
   * Opens the index at `path`, empty if the file does not exist. A torn last entry (a crash during
   * its append) is cut, so later appends stay aligned; Kafka reads past it too. Throws
   * CorruptTransactionIndexError for an entry of an unknown version, one ending before
   * `startOffset` (Kafka's sanity check) or last offsets that do not increase.
   */
  static async open(disk: Disk, path: string, startOffset: bigint): Promise<TransactionIndex> {
    let file: DiskFile
    try {
      file = await disk.open(path)
    } catch (e) {
      if (isNotFound(e)) return new TransactionIndex(disk, path, startOffset, null, [])
      throw e
    }
    try {
      const whole = file.size() - (file.size() % ABORTED_TXN_BYTES)
      const bytes = Buffer.alloc(whole)
      if ((await file.read(bytes, 0, whole)) !== whole)
        throw new CorruptTransactionIndexError(`${path}: short read`)
      const entries = decodeEntries(bytes, path, startOffset)
      if (whole < file.size()) await file.truncate(whole)
      return new TransactionIndex(disk, path, startOffset, file, entries)
    } catch (e) {
      await file.close()
      throw e
    }
  }

  get entries(): readonly AbortedTxn[] {
    return this.#entries
  }

  /** The last entry's last offset, or null when empty. */
  get lastOffset(): bigint | null {
    return this.#entries.at(-1)?.lastOffset ?? null
  }

  /** Appends an entry; its last offset must exceed the previous one's, as Kafka requires. Not durable until `flush`. */
  async append(txn: AbortedTxn): Promise<void> {
    const last = this.lastOffset
    if (last !== null && txn.lastOffset <= last) {
      throw new RangeError(
        `aborted transaction last offset ${txn.lastOffset} does not exceed ${last} in ${this.path}`,
      )
    }
    this.#file ??= await this.#disk.open(this.path, { create: true })
    await this.#file.append([encodeAbortedTxn(txn)])
    this.#entries.push(txn)
  }

  /** The aborted transactions a fetch of `[fetchOffset, upperBoundOffset)` must report, as Kafka's collectAbortedTxns. */
  collectAbortedTxns(fetchOffset: bigint, upperBoundOffset: bigint): AbortedTxnSearch {
    const abortedTransactions: AbortedTxn[] = []
    for (const txn of this.#entries) {
      if (txn.lastOffset >= fetchOffset && txn.firstOffset < upperBoundOffset) abortedTransactions.push(txn)
      if (txn.lastStableOffset >= upperBoundOffset) return { abortedTransactions, isComplete: true }
    }
    return { abortedTransactions, isComplete: false }
  }

  /** Removes the entries whose last offset is `offset` or beyond (log truncation). */
  async truncateTo(offset: bigint): Promise<void> {
    const keep = this.#entries.findIndex((t) => t.lastOffset >= offset)
    if (keep < 0) return
    this.#entries = this.#entries.slice(0, keep)
    await this.#file?.truncate(keep * ABORTED_TXN_BYTES)
  }

  /** Removes every entry (the segment is emptied). */
  async reset(): Promise<void> {
    this.#entries = []
    await this.#file?.truncate(0)
  }

  async flush(): Promise<void> {
    await this.#file?.sync()
  }

  async close(): Promise<void> {
    const file = this.#file
    this.#file = null
    await file?.close()
  }
}

function decodeEntries(bytes: Buffer, path: string, startOffset: bigint): AbortedTxn[] {
  const entries: AbortedTxn[] = []
  let last: bigint | null = null
  for (let at = 0; at + ABORTED_TXN_BYTES <= bytes.length; at += ABORTED_TXN_BYTES) {
    const version = bytes.readInt16BE(at)
    if (version !== ABORTED_TXN_VERSION) {
      throw new CorruptTransactionIndexError(`${path}: aborted transaction version ${version} at ${at}`)
    }
    const txn: AbortedTxn = {
      producerId: bytes.readBigInt64BE(at + 2),
      firstOffset: bytes.readBigInt64BE(at + 10),
      lastOffset: bytes.readBigInt64BE(at + 18),
      lastStableOffset: bytes.readBigInt64BE(at + 26),
    }
    if (txn.lastOffset < startOffset) {
      throw new CorruptTransactionIndexError(
        `${path}: last offset ${txn.lastOffset} is below the start offset ${startOffset}`,
      )
    }
    if (last !== null && txn.lastOffset <= last) {
      throw new CorruptTransactionIndexError(`${path}: last offset ${txn.lastOffset} does not exceed ${last}`)
    }
    last = txn.lastOffset
    entries.push(txn)
  }
  return entries
}

/**
 * Walks the record batches of a segment file through one bounded read buffer: headers only (index
 * rebuilds, offset lookups), whole batches (cleaner, timestamp search) or validated (recovery).
 */
import type { DiskFile } from '../io/index.ts'
import { assert } from '../model/index.ts'
import {
  BATCH_HEADER_BYTES,
  BATCH_LENGTH_MIN,
  type BatchHeader,
  BatchOffsets,
  CRC_START,
  checkBatch,
  crc32c,
  LOG_OVERHEAD,
  MAGIC_V2,
  readBatchHeader,
} from '../protocol/index.ts'

/** One batch found in a file. */
export interface FileBatch {
  /** Byte position of the batch in the file. */
  readonly position: number
  /** Total bytes of the batch. */
  readonly size: number
  readonly header: BatchHeader
  /** Offset of the last record slot: `baseOffset + lastOffsetDelta`. */
  readonly lastOffset: bigint
  /** The whole batch (mode `bytes`), a view valid until the next call; null in other modes. */
  readonly bytes: Buffer | null
}

/** Why a walk stopped before the end: the bytes from `position` on are not a valid batch. */
export interface FileBatchProblem {
  readonly position: number
  readonly reason: string
}

export type ReadMode = 'header' | 'bytes' | 'validate'

/** The walk reached `end`, or found a problem. */
export function isProblem(x: FileBatch | FileBatchProblem | null): x is FileBatchProblem {
  return x !== null && 'reason' in x
}

/**
 * A cursor over the batches in `[start, end)` of a file. The buffer is `bufferBytes` long; a batch
 * larger than it is read into its own buffer (`bytes` mode) or checked in pieces (`validate`).
 */
export class FileBatchReader {
  readonly #file: DiskFile
  readonly #end: number
  #buf: Buffer
  /** File position of `#buf[0]`, and how many bytes of `#buf` are valid. */
  #bufStart = 0
  #bufLen = 0
  /** Position of the next batch. */
  position: number

  constructor(file: DiskFile, start: number, end: number, bufferBytes: number) {
    assert(bufferBytes >= BATCH_HEADER_BYTES, 'reader buffer must hold a batch header')
    this.#file = file
    this.position = start
    this.#end = end
    this.#buf = Buffer.allocUnsafe(bufferBytes)
  }

  /** Make `[position, position + n)` readable from the buffer (n <= buffer size); false past end. */
  async #ensure(position: number, n: number): Promise<boolean> {
    if (position + n > this.#end) return false
    if (position >= this.#bufStart && position + n <= this.#bufStart + this.#bufLen) return true
    const want = Math.min(this.#buf.length, this.#end - position)
    const got = await this.#file.read(this.#buf, position, want)
    this.#bufStart = position
    this.#bufLen = got
    return got >= n
  }

  #view(position: number, n: number): Buffer {
    const at = position - this.#bufStart
    return this.#buf.subarray(at, at + n)
  }

  /**
   * The next batch, null at the end, or the problem that stops the walk. In `validate` mode the
   * batch's structure and CRC are checked as log bytes (checkBatch with origin `log`).
   */
  async next(mode: ReadMode): Promise<FileBatch | FileBatchProblem | null> {
    const position = this.position
    if (position >= this.#end) return null
    const remaining = this.#end - position
    if (remaining < BATCH_HEADER_BYTES || !(await this.#ensure(position, BATCH_HEADER_BYTES))) {
      return { position, reason: `${remaining} bytes at the end are too few for a batch header` }
    }
    const head = this.#view(position, BATCH_HEADER_BYTES)
    const batchLength = head.readInt32BE(BatchOffsets.batchLength)
    const magic = head.readInt8(BatchOffsets.magic)
    if (magic !== MAGIC_V2) return { position, reason: `magic ${magic}` }
    if (batchLength < BATCH_LENGTH_MIN) return { position, reason: `batch length ${batchLength}` }
    const size = LOG_OVERHEAD + batchLength
    if (size > remaining)
      return { position, reason: `batch of ${size} bytes runs past the end (${remaining} left)` }
    const header = readBatchHeader(head, 0)
    const lastOffset = header.baseOffset + BigInt(header.lastOffsetDelta)
    let bytes: Buffer | null = null
    if (mode === 'bytes' || mode === 'validate') {
      if (size <= this.#buf.length) {
        await this.#ensure(position, size)
        bytes = this.#view(position, size)
        if (mode === 'validate') {
          const checked = checkBatch(bytes, 0, { origin: 'log' })
          if ('reason' in checked) return { position, reason: checked.message }
          bytes = null
        }
      } else if (mode === 'bytes') {
        bytes = Buffer.allocUnsafe(size)
        const got = await this.#file.read(bytes, position, size)
        if (got < size) return { position, reason: 'short read' }
      } else {
        const problem = await this.#validateLarge(position, size, header)
        if (problem !== null) return { position, reason: problem }
      }
    }
    this.position = position + size
    return { position, size, header, lastOffset, bytes }
  }

  /** Check a batch larger than the buffer: header fields, then the CRC piece by piece. */
  async #validateLarge(position: number, size: number, header: BatchHeader): Promise<string | null> {
    const { recordCount, lastOffsetDelta } = header
    if (recordCount < 0 || lastOffsetDelta < 0 || recordCount > lastOffsetDelta + 1) {
      return `inconsistent batch: lastOffsetDelta ${lastOffsetDelta} and record count ${recordCount}`
    }
    let crc = 0
    let at = position + CRC_START
    const end = position + size
    while (at < end) {
      const n = Math.min(this.#buf.length, end - at)
      if (!(await this.#ensure(at, n))) return 'short read'
      crc = crc32c(this.#view(at, n), crc)
      at += n
    }
    return crc === header.crc ? null : `record batch is corrupt: stored crc ${header.crc} but computed ${crc}`
  }
}

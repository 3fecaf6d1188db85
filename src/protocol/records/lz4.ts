/**
 * LZ4 in the frame format Kafka uses for compression type 3 (KafkaLZ4BlockOutputStream): version 01,
 * independent blocks, 64 KiB maximum block size, a correct header checksum, no content size, no
 * checksums. Decoding accepts what Kafka's reader accepts (optional content size, block and content
 * checksums, 64 KiB to 4 MiB blocks) and refuses what it refuses (dependent blocks, a dictionary id,
 * reserved bits). Pure TypeScript; the block codec follows the LZ4 block format specification.
 */
import { CompressionError } from './compression-error.ts'
import { xxhash32 } from './xxhash32.ts'

const FRAME_MAGIC = 0x184d2204
const FLG_VERSION_MASK = 0xc0
const FLG_VERSION_01 = 0x40
const FLG_BLOCK_INDEPENDENCE = 0x20
const FLG_BLOCK_CHECKSUM = 0x10
const FLG_CONTENT_SIZE = 0x08
const FLG_CONTENT_CHECKSUM = 0x04
const FLG_RESERVED = 0x02
const FLG_DICT_ID = 0x01
const BD_BLOCK_MAX_MASK = 0x70
const BD_RESERVED = 0x8f
const BLOCK_UNCOMPRESSED_BIT = 0x80000000
/** BD value for a 64 KiB maximum block, what Kafka writes. */
const BD_64KB = 0x40

export const LZ4_BLOCK_BYTES_MAX = 64 * 1024
/** The header we write: magic, FLG, BD, HC. */
const FRAME_HEADER_BYTES = 7
const BLOCK_HEADER_BYTES = 4
const END_MARK_BYTES = 4

/** Block-format constants (lz4 block format description). */
const MIN_MATCH = 4
const LAST_LITERALS = 5
const MF_LIMIT = 12
const MAX_OFFSET = 65535
const HASH_BITS = 14
const SKIP_TRIGGER = 6
/** Literal or match runs at least this long are copied with `set`/`copyWithin`, shorter ones byte by byte. */
const BULK_COPY_BYTES_MIN = 32

function corrupt(message: string): CompressionError {
  return new CompressionError('corrupt', `lz4: ${message}`)
}

/** Worst-case size of one compressed block of `n` input bytes. */
export function lz4BlockBound(n: number): number {
  return n + Math.floor(n / 255) + 16
}

/** Worst-case size of `lz4CompressFrame` output for `n` input bytes. */
export function lz4FrameBound(n: number): number {
  const blocks = Math.max(1, Math.ceil(n / LZ4_BLOCK_BYTES_MAX))
  return FRAME_HEADER_BYTES + END_MARK_BYTES + n + blocks * BLOCK_HEADER_BYTES
}

function readU32LE(buf: Uint8Array, i: number): number {
  return (buf[i]! | (buf[i + 1]! << 8) | (buf[i + 2]! << 16) | (buf[i + 3]! << 24)) >>> 0
}

function writeU32LE(buf: Uint8Array, i: number, v: number): void {
  buf[i] = v & 0xff
  buf[i + 1] = (v >>> 8) & 0xff
  buf[i + 2] = (v >>> 16) & 0xff
  buf[i + 3] = (v >>> 24) & 0xff
}

function hash4(seq: number): number {
  return Math.imul(seq, 2654435761) >>> (32 - HASH_BITS)
}

/** Reused between calls and cleared per block, so the output depends only on the input. */
const hashTable = new Int32Array(1 << HASH_BITS)

/**
 * Compress `src[start, end)` as one independent LZ4 block into `dst` at `at` (which must have
 * `lz4BlockBound(end - start)` bytes free). Returns the end position in `dst`.
 */
export function lz4CompressBlock(
  src: Uint8Array,
  start: number,
  end: number,
  dst: Uint8Array,
  at: number,
): number {
  const table = hashTable
  // Entries are position + 1 (0: empty).
  table.fill(0)
  let d = at
  let anchor = start
  const length = end - start
  if (length >= MF_LIMIT + 1) {
    const matchLimit = end - LAST_LITERALS
    const searchLimit = end - MF_LIMIT
    let ip = start + 1
    let searched = 1 << SKIP_TRIGGER
    while (ip < searchLimit) {
      const seq = src[ip]! | (src[ip + 1]! << 8) | (src[ip + 2]! << 16) | (src[ip + 3]! << 24)
      const h = hash4(seq)
      const ref = table[h]! - 1
      table[h] = ip + 1
      if (
        ref < start ||
        ip - ref > MAX_OFFSET ||
        src[ref] !== src[ip] ||
        src[ref + 1] !== src[ip + 1] ||
        src[ref + 2] !== src[ip + 2] ||
        src[ref + 3] !== src[ip + 3]
      ) {
        ip += searched++ >>> SKIP_TRIGGER
        continue
      }
      searched = 1 << SKIP_TRIGGER
      // Extend backwards over literals, then forwards up to the last-literals limit.
      let mStart = ip
      let rStart = ref
      while (mStart > anchor && rStart > start && src[mStart - 1] === src[rStart - 1]) {
        mStart--
        rStart--
      }
      let mEnd = ip + MIN_MATCH
      let rEnd = ref + MIN_MATCH
      while (mEnd < matchLimit && src[mEnd] === src[rEnd]) {
        mEnd++
        rEnd++
      }
      d = writeSequence(src, anchor, mStart - anchor, mStart - rStart, mEnd - mStart, dst, d)
      anchor = mEnd
      ip = mEnd
      // Index a position inside the match so the next search has a recent candidate.
      if (ip - 2 > start && ip - 2 < searchLimit) {
        const p = ip - 2
        table[hash4(src[p]! | (src[p + 1]! << 8) | (src[p + 2]! << 16) | (src[p + 3]! << 24))] = p + 1
      }
    }
  }
  return writeLastLiterals(src, anchor, end - anchor, dst, d)
}

function writeLength(dst: Uint8Array, d: number, rest: number): number {
  let n = rest
  while (n >= 255) {
    dst[d++] = 255
    n -= 255
  }
  dst[d++] = n
  return d
}

function copyBytes(src: Uint8Array, from: number, n: number, dst: Uint8Array, d: number): void {
  if (n >= BULK_COPY_BYTES_MIN) dst.set(src.subarray(from, from + n), d)
  else for (let k = 0; k < n; k++) dst[d + k] = src[from + k]!
}

function writeSequence(
  src: Uint8Array,
  literalStart: number,
  literals: number,
  offset: number,
  matchLength: number,
  dst: Uint8Array,
  at: number,
): number {
  let d = at
  const tokenAt = d++
  const ml = matchLength - MIN_MATCH
  dst[tokenAt] = Math.min(ml, 15) | (Math.min(literals, 15) << 4)
  if (literals >= 15) d = writeLength(dst, d, literals - 15)
  copyBytes(src, literalStart, literals, dst, d)
  d += literals
  dst[d++] = offset & 0xff
  dst[d++] = offset >>> 8
  if (ml >= 15) d = writeLength(dst, d, ml - 15)
  return d
}

function writeLastLiterals(
  src: Uint8Array,
  literalStart: number,
  literals: number,
  dst: Uint8Array,
  at: number,
): number {
  let d = at
  dst[d++] = Math.min(literals, 15) << 4
  if (literals >= 15) d = writeLength(dst, d, literals - 15)
  copyBytes(src, literalStart, literals, dst, d)
  return d + literals
}

/**
 * Decode one LZ4 block `src[start, end)` into `dst` from `at`, writing at most up to `dstEnd`. Matches
 * may reach back to `windowStart` and no further (the block's own start for independent blocks).
 * Returns the end position in `dst`. Every length and offset is checked: bad input throws
 * `CompressionError('corrupt')`, output past `dstEnd` throws `CompressionError('too-large')`.
 */
export function lz4DecompressBlock(
  src: Uint8Array,
  start: number,
  end: number,
  dst: Uint8Array,
  at: number,
  dstEnd: number,
  windowStart = at,
): number {
  let s = start
  let d = at
  for (;;) {
    if (s >= end) throw corrupt('block ends inside a sequence')
    const token = src[s++]!
    let literals = token >>> 4
    if (literals === 15) {
      let b: number
      do {
        if (s >= end) throw corrupt('block ends inside a literal length')
        b = src[s++]!
        literals += b
      } while (b === 255)
    }
    if (literals > end - s) throw corrupt('literal run past the end of the block')
    if (literals > dstEnd - d) throw new CompressionError('too-large', 'lz4: output exceeds its limit')
    copyBytes(src, s, literals, dst, d)
    s += literals
    d += literals
    if (s === end) return d
    if (end - s < 2) throw corrupt('block ends inside a match offset')
    const offset = src[s]! | (src[s + 1]! << 8)
    s += 2
    if (offset === 0 || offset > d - windowStart) throw corrupt(`match offset ${offset} outside the window`)
    let matchLength = token & 15
    if (matchLength === 15) {
      let b: number
      do {
        if (s >= end) throw corrupt('block ends inside a match length')
        b = src[s++]!
        matchLength += b
      } while (b === 255)
    }
    matchLength += MIN_MATCH
    if (matchLength > dstEnd - d) throw new CompressionError('too-large', 'lz4: output exceeds its limit')
    const from = d - offset
    if (offset >= matchLength && matchLength >= BULK_COPY_BYTES_MIN) {
      dst.copyWithin(d, from, from + matchLength)
      d += matchLength
    } else {
      // Overlapping copies repeat the last `offset` bytes: byte by byte is the definition.
      for (let k = 0; k < matchLength; k++) dst[d + k] = dst[from + k]!
      d += matchLength
    }
  }
}

/**
 * Compress `data` into one LZ4 frame as Kafka writes it: FLG 0x60 (version 01, independent blocks),
 * BD 0x40 (64 KiB blocks), header checksum, blocks (stored raw when compression does not shrink
 * them), end mark.
 */
export function lz4CompressFrame(data: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(lz4FrameBound(data.length) + lz4BlockBound(LZ4_BLOCK_BYTES_MAX))
  writeU32LE(out, 0, FRAME_MAGIC)
  out[4] = FLG_VERSION_01 | FLG_BLOCK_INDEPENDENCE
  out[5] = BD_64KB
  out[6] = (xxhash32(out, 0, 4, 6) >>> 8) & 0xff
  let d = FRAME_HEADER_BYTES
  for (let s = 0; s < data.length; s += LZ4_BLOCK_BYTES_MAX) {
    const blockEnd = Math.min(s + LZ4_BLOCK_BYTES_MAX, data.length)
    const n = blockEnd - s
    const bodyAt = d + BLOCK_HEADER_BYTES
    const compressedEnd = lz4CompressBlock(data, s, blockEnd, out, bodyAt)
    const compressed = compressedEnd - bodyAt
    if (compressed < n) {
      writeU32LE(out, d, compressed)
      d = compressedEnd
    } else {
      writeU32LE(out, d, (n | BLOCK_UNCOMPRESSED_BIT) >>> 0)
      out.set(data.subarray(s, blockEnd), bodyAt)
      d = bodyAt + n
    }
  }
  writeU32LE(out, d, 0)
  d += END_MARK_BYTES
  return out.subarray(0, d)
}

interface FrameLayout {
  flg: number
  blockBytesMax: number
  contentSize: number | null
  /** Position of the first block header. */
  blocksAt: number
}

function readFrameHeader(src: Uint8Array): FrameLayout {
  if (src.length < FRAME_HEADER_BYTES) throw corrupt('frame shorter than its header')
  if (readU32LE(src, 0) !== FRAME_MAGIC) throw corrupt('not an LZ4 frame (bad magic)')
  const flg = src[4]!
  const bd = src[5]!
  if ((flg & FLG_VERSION_MASK) !== FLG_VERSION_01) throw corrupt(`frame version ${flg >>> 6} is not 1`)
  if ((flg & FLG_RESERVED) !== 0 || (bd & BD_RESERVED) !== 0)
    throw corrupt('reserved frame descriptor bits set')
  if ((flg & FLG_DICT_ID) !== 0) throw new CompressionError('unsupported', 'lz4: frames with a dictionary id')
  if ((flg & FLG_BLOCK_INDEPENDENCE) === 0) {
    // Kafka's reader refuses these ("Dependent block stream is unsupported"); accepting them would put
    // a batch in the log that Java consumers cannot read.
    throw new CompressionError('unsupported', 'lz4: dependent blocks (Kafka requires independent blocks)')
  }
  const blockMaxId = (bd & BD_BLOCK_MAX_MASK) >>> 4
  if (blockMaxId < 4) throw corrupt(`block maximum size id ${blockMaxId}`)
  let p = 6
  let contentSize: number | null = null
  if ((flg & FLG_CONTENT_SIZE) !== 0) {
    if (src.length < p + 8 + 1) throw corrupt('frame shorter than its header')
    const low = readU32LE(src, p)
    const high = readU32LE(src, p + 4)
    // Anything over 2^53 is over every limit; keep it as Infinity so the limit check refuses it.
    contentSize = high >= 0x200000 ? Number.POSITIVE_INFINITY : high * 0x100000000 + low
    p += 8
  }
  const hc = (xxhash32(src, 0, 4, p) >>> 8) & 0xff
  if (src[p] !== hc) throw corrupt('frame descriptor checksum mismatch')
  return { flg, blockBytesMax: 1 << (2 * blockMaxId + 8), contentSize, blocksAt: p + 1 }
}

/**
 * Decompress one LZ4 frame (trailing bytes after the end mark are refused). The output is bounded by
 * `maxBytes`: a declared content size above it is refused before allocating, otherwise the output
 * buffer is sized from the block headers (each block yields at most the frame's block maximum), so a
 * bomb fails with `CompressionError('too-large')` having allocated at most `maxBytes`.
 */
export function lz4DecompressFrame(src: Uint8Array, maxBytes: number): Buffer {
  const layout = readFrameHeader(src)
  const { flg, blockBytesMax } = layout
  const blockChecksum = (flg & FLG_BLOCK_CHECKSUM) !== 0
  const contentChecksum = (flg & FLG_CONTENT_CHECKSUM) !== 0
  if (layout.contentSize !== null && layout.contentSize > maxBytes) {
    throw new CompressionError('too-large', `lz4: content size ${layout.contentSize} exceeds ${maxBytes}`)
  }
  // First pass: walk the block headers to validate the structure and bound the output.
  let bound = 0
  let p = layout.blocksAt
  for (;;) {
    if (src.length - p < BLOCK_HEADER_BYTES) throw corrupt('frame ends before its end mark')
    const header = readU32LE(src, p)
    p += BLOCK_HEADER_BYTES
    if (header === 0) break
    const size = header & ~BLOCK_UNCOMPRESSED_BIT
    if (size > blockBytesMax)
      throw corrupt(`block of ${size} bytes exceeds the frame maximum ${blockBytesMax}`)
    const stored = (header & BLOCK_UNCOMPRESSED_BIT) !== 0
    bound += stored ? size : blockBytesMax
    p += size + (blockChecksum ? 4 : 0)
    if (p > src.length) throw corrupt('block past the end of the frame')
  }
  const end = p + (contentChecksum ? 4 : 0)
  if (end > src.length) throw corrupt('frame ends inside its content checksum')
  if (end !== src.length) throw corrupt(`${src.length - end} bytes after the frame`)
  const capacity = Math.min(bound, maxBytes, layout.contentSize ?? Number.POSITIVE_INFINITY)
  // Zeroed: when the blocks yield less than `capacity`, the spare bytes must not be old memory.
  const out = Buffer.alloc(capacity)
  let d = 0
  p = layout.blocksAt
  for (;;) {
    const header = readU32LE(src, p)
    p += BLOCK_HEADER_BYTES
    if (header === 0) break
    const size = header & ~BLOCK_UNCOMPRESSED_BIT
    if (blockChecksum && xxhash32(src, 0, p, p + size) !== readU32LE(src, p + size)) {
      throw corrupt('block checksum mismatch')
    }
    if ((header & BLOCK_UNCOMPRESSED_BIT) !== 0) {
      if (size > capacity - d) throw tooLarge(layout.contentSize, maxBytes)
      out.set(src.subarray(p, p + size), d)
      d += size
    } else {
      const blockCap = Math.min(capacity, d + blockBytesMax)
      try {
        d = lz4DecompressBlock(src, p, p + size, out, d, blockCap)
      } catch (e) {
        if (e instanceof CompressionError && e.kind === 'too-large' && blockCap === d + blockBytesMax) {
          throw corrupt(`block decodes to more than the frame maximum ${blockBytesMax}`)
        }
        if (e instanceof CompressionError && e.kind === 'too-large')
          throw tooLarge(layout.contentSize, maxBytes)
        throw e
      }
    }
    p += size + (blockChecksum ? 4 : 0)
  }
  if (layout.contentSize !== null && d !== layout.contentSize) {
    throw corrupt(`frame declares ${layout.contentSize} bytes but holds ${d}`)
  }
  if (contentChecksum && xxhash32(out, 0, 0, d) !== readU32LE(src, p))
    throw corrupt('content checksum mismatch')
  return d === out.length ? out : out.subarray(0, d)
}

function tooLarge(contentSize: number | null, maxBytes: number): CompressionError {
  return contentSize !== null && contentSize <= maxBytes
    ? corrupt(`frame holds more than its declared content size ${contentSize}`)
    : new CompressionError('too-large', `lz4: output exceeds ${maxBytes} bytes`)
}

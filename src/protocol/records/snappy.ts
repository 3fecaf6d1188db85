/**
 * Snappy for compression type 2, in both forms Kafka clients send: a raw Snappy block (librdkafka,
 * kafkajs) and xerial snappy-java's framing (the Java client): the 16-byte header 0x82 'SNAPPY' 0x00,
 * int32 version, int32 compatible version, then [int32 length, raw block]... all big-endian.
 * Decoding tells them apart by the header. Pure TypeScript block codec after the Snappy format
 * description; output is bounded by the caller's limit before anything is allocated.
 */
import { CompressionError } from './compression-error.ts'

const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00])
const XERIAL_HEADER_BYTES = 16
const XERIAL_VERSION = 1
const XERIAL_COMPATIBLE_VERSION = 1
/** snappy-java's default block size (SnappyOutputStream), which Kafka's Java producer uses. */
export const XERIAL_BLOCK_BYTES = 32 * 1024

const TAG_LITERAL = 0
const TAG_COPY1 = 1
const TAG_COPY2 = 2
/** Snappy compresses in independent 64 KiB fragments, so a copy offset always fits 16 bits. */
const FRAGMENT_BYTES = 65536
const HASH_BITS = 14
const MIN_MATCH = 4
const SKIP_TRIGGER = 5
const BULK_COPY_BYTES_MIN = 32
const PREAMBLE_BYTES_MAX = 5

function corrupt(message: string): CompressionError {
  return new CompressionError('corrupt', `snappy: ${message}`)
}

/** Worst-case size of a raw Snappy block for `n` input bytes (from the format's MaxCompressedLength). */
export function snappyBound(n: number): number {
  return 32 + n + Math.floor(n / 6)
}

const hashTable = new Int32Array(1 << HASH_BITS)

function load32(src: Uint8Array, i: number): number {
  return src[i]! | (src[i + 1]! << 8) | (src[i + 2]! << 16) | (src[i + 3]! << 24)
}

function hash4(seq: number): number {
  return Math.imul(seq, 0x1e35a7bd) >>> (32 - HASH_BITS)
}

function copyBytes(src: Uint8Array, from: number, n: number, dst: Uint8Array, d: number): void {
  if (n >= BULK_COPY_BYTES_MIN) dst.set(src.subarray(from, from + n), d)
  else for (let k = 0; k < n; k++) dst[d + k] = src[from + k]!
}

function writeLiteral(src: Uint8Array, from: number, n: number, dst: Uint8Array, at: number): number {
  let d = at
  const m = n - 1
  if (m < 60) {
    dst[d++] = (m << 2) | TAG_LITERAL
  } else if (m < 0x100) {
    dst[d++] = (60 << 2) | TAG_LITERAL
    dst[d++] = m
  } else if (m < 0x10000) {
    dst[d++] = (61 << 2) | TAG_LITERAL
    dst[d++] = m & 0xff
    dst[d++] = m >>> 8
  } else if (m < 0x1000000) {
    dst[d++] = (62 << 2) | TAG_LITERAL
    dst[d++] = m & 0xff
    dst[d++] = (m >>> 8) & 0xff
    dst[d++] = m >>> 16
  } else {
    dst[d++] = (63 << 2) | TAG_LITERAL
    dst[d++] = m & 0xff
    dst[d++] = (m >>> 8) & 0xff
    dst[d++] = (m >>> 16) & 0xff
    dst[d++] = m >>> 24
  }
  copyBytes(src, from, n, dst, d)
  return d + n
}

function writeCopy2(offset: number, n: number, dst: Uint8Array, d: number): number {
  dst[d] = ((n - 1) << 2) | TAG_COPY2
  dst[d + 1] = offset & 0xff
  dst[d + 2] = offset >>> 8
  return d + 3
}

function writeCopy(offset: number, length: number, dst: Uint8Array, at: number): number {
  let d = at
  let n = length
  // A copy2 element holds 1..64 bytes; split long matches so that no piece is shorter than 4.
  while (n >= 68) {
    d = writeCopy2(offset, 64, dst, d)
    n -= 64
  }
  if (n > 64) {
    d = writeCopy2(offset, 60, dst, d)
    n -= 60
  }
  if (n < 12 && offset < 2048) {
    dst[d++] = ((offset >>> 8) << 5) | ((n - 4) << 2) | TAG_COPY1
    dst[d++] = offset & 0xff
    return d
  }
  return writeCopy2(offset, n, dst, d)
}

function compressFragment(src: Uint8Array, start: number, end: number, dst: Uint8Array, at: number): number {
  const table = hashTable
  table.fill(0)
  let d = at
  let anchor = start
  const searchLimit = end - MIN_MATCH
  let ip = start + 1
  let searched = 1 << SKIP_TRIGGER
  while (ip <= searchLimit) {
    const seq = load32(src, ip)
    const h = hash4(seq)
    const ref = table[h]! - 1
    table[h] = ip + 1
    if (ref < start || load32(src, ref) !== seq) {
      ip += searched++ >>> SKIP_TRIGGER
      continue
    }
    searched = 1 << SKIP_TRIGGER
    let mEnd = ip + MIN_MATCH
    let rEnd = ref + MIN_MATCH
    while (mEnd < end && src[mEnd] === src[rEnd]) {
      mEnd++
      rEnd++
    }
    if (ip > anchor) d = writeLiteral(src, anchor, ip - anchor, dst, d)
    d = writeCopy(ip - ref, mEnd - ip, dst, d)
    anchor = mEnd
    ip = mEnd
    if (ip - 1 <= searchLimit) table[hash4(load32(src, ip - 1))] = ip
  }
  if (anchor < end) d = writeLiteral(src, anchor, end - anchor, dst, d)
  return d
}

function writeUvarint(dst: Uint8Array, at: number, v: number): number {
  let d = at
  let x = v >>> 0
  while (x > 0x7f) {
    dst[d++] = (x & 0x7f) | 0x80
    x >>>= 7
  }
  dst[d++] = x
  return d
}

/** Compress `src[start, end)` as a raw Snappy block into `dst` at `at`; returns the end position. */
export function snappyCompressInto(
  src: Uint8Array,
  start: number,
  end: number,
  dst: Uint8Array,
  at: number,
): number {
  let d = writeUvarint(dst, at, end - start)
  for (let s = start; s < end; s += FRAGMENT_BYTES) {
    d = compressFragment(src, s, Math.min(s + FRAGMENT_BYTES, end), dst, d)
  }
  return d
}

/** A raw Snappy block (what librdkafka writes). */
export function snappyCompressRaw(data: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(snappyBound(data.length))
  return out.subarray(0, snappyCompressInto(data, 0, data.length, out, 0))
}

/** The uncompressed length a raw block declares in its preamble, and where its elements start. */
export function snappyDecodedLength(
  src: Uint8Array,
  start = 0,
  end = src.length,
): { length: number; at: number } {
  let value = 0
  let shift = 0
  for (let i = 0; i < PREAMBLE_BYTES_MAX; i++) {
    if (start + i >= end) throw corrupt('block ends inside its length preamble')
    const b = src[start + i]!
    value += (b & 0x7f) * 2 ** shift
    if ((b & 0x80) === 0) {
      if (value > 0xffffffff) throw corrupt('length preamble over 32 bits')
      return { length: value, at: start + i + 1 }
    }
    shift += 7
  }
  throw corrupt('length preamble longer than 5 bytes')
}

/**
 * Decode the elements of a raw block `src[start, end)` into `dst[at, at + length)`; the block must
 * produce exactly `length` bytes. Offsets may not reach before `at`.
 */
function decodeElements(
  src: Uint8Array,
  start: number,
  end: number,
  dst: Uint8Array,
  at: number,
  length: number,
): void {
  let s = start
  let d = at
  const dEnd = at + length
  while (s < end) {
    const tag = src[s++]!
    const kind = tag & 3
    if (kind === TAG_LITERAL) {
      let n = tag >>> 2
      if (n >= 60) {
        const bytes = n - 59
        if (end - s < bytes) throw corrupt('block ends inside a literal length')
        n = 0
        for (let k = bytes - 1; k >= 0; k--) n = n * 256 + src[s + k]!
        s += bytes
      }
      n += 1
      if (n > end - s) throw corrupt('literal past the end of the block')
      if (n > dEnd - d) throw corrupt('block decodes to more than its declared length')
      copyBytes(src, s, n, dst, d)
      s += n
      d += n
      continue
    }
    let n: number
    let offset: number
    if (kind === TAG_COPY1) {
      if (s >= end) throw corrupt('block ends inside a copy')
      n = ((tag >>> 2) & 7) + 4
      offset = ((tag >>> 5) << 8) | src[s++]!
    } else if (kind === TAG_COPY2) {
      if (end - s < 2) throw corrupt('block ends inside a copy')
      n = (tag >>> 2) + 1
      offset = src[s]! | (src[s + 1]! << 8)
      s += 2
    } else {
      // TAG_COPY4: written by encoders with fragments over 64 KiB; ours never does, others may.
      if (end - s < 4) throw corrupt('block ends inside a copy')
      n = (tag >>> 2) + 1
      offset = (src[s]! | (src[s + 1]! << 8) | (src[s + 2]! << 16) | (src[s + 3]! << 24)) >>> 0
      s += 4
    }
    if (offset === 0 || offset > d - at) throw corrupt(`copy offset ${offset} outside the output`)
    if (n > dEnd - d) throw corrupt('block decodes to more than its declared length')
    const from = d - offset
    if (offset >= n && n >= BULK_COPY_BYTES_MIN) dst.copyWithin(d, from, from + n)
    else for (let k = 0; k < n; k++) dst[d + k] = dst[from + k]!
    d += n
  }
  if (d !== dEnd) throw corrupt(`block decodes to ${d - at} bytes, declared ${length}`)
}

/** Decode a raw Snappy block, refusing a declared length over `maxBytes` before allocating. */
export function snappyDecompressRaw(src: Uint8Array, maxBytes: number): Buffer {
  const { length, at } = snappyDecodedLength(src)
  if (length > maxBytes)
    throw new CompressionError('too-large', `snappy: block declares ${length} bytes, over ${maxBytes}`)
  // Unsafe allocation is sound: decodeElements writes every byte or throws.
  const out = Buffer.allocUnsafe(length)
  decodeElements(src, at, src.length, out, 0, length)
  return out
}

/** True when `src` starts with snappy-java's stream header. */
export function isXerialFramed(src: Uint8Array): boolean {
  if (src.length < XERIAL_HEADER_BYTES) return false
  for (let i = 0; i < XERIAL_MAGIC.length; i++) if (src[i] !== XERIAL_MAGIC[i]) return false
  return true
}

/** xerial snappy-java's stream format, as the Java client writes it: 32 KiB blocks. */
export function snappyCompressXerial(data: Uint8Array): Buffer {
  const blocks: Uint8Array[] = []
  let total = XERIAL_HEADER_BYTES
  for (let s = 0; s < data.length; s += XERIAL_BLOCK_BYTES) {
    const block = snappyCompressRaw(data.subarray(s, Math.min(s + XERIAL_BLOCK_BYTES, data.length)))
    blocks.push(block)
    total += 4 + block.length
  }
  const out = Buffer.allocUnsafe(total)
  out.set(XERIAL_MAGIC, 0)
  out.writeInt32BE(XERIAL_VERSION, 8)
  out.writeInt32BE(XERIAL_COMPATIBLE_VERSION, 12)
  let d = XERIAL_HEADER_BYTES
  for (const block of blocks) {
    out.writeInt32BE(block.length, d)
    out.set(block, d + 4)
    d += 4 + block.length
  }
  return out
}

/**
 * Decode snappy-java's stream format. First pass reads every block's declared length, so the total
 * is checked against `maxBytes` and allocated once; second pass decodes in place.
 */
export function snappyDecompressXerial(src: Uint8Array, maxBytes: number): Buffer {
  if (!isXerialFramed(src)) throw corrupt('missing the xerial stream header')
  const blocks: { at: number; end: number; length: number }[] = []
  let total = 0
  let p = XERIAL_HEADER_BYTES
  while (p < src.length) {
    if (src.length - p < 4) throw corrupt('stream ends inside a block length')
    const size = ((src[p]! << 24) | (src[p + 1]! << 16) | (src[p + 2]! << 8) | src[p + 3]!) >>> 0
    p += 4
    if (size > src.length - p) throw corrupt('block past the end of the stream')
    const { length, at } = snappyDecodedLength(src, p, p + size)
    total += length
    if (total > maxBytes)
      throw new CompressionError('too-large', `snappy: stream declares over ${maxBytes} bytes`)
    blocks.push({ at, end: p + size, length })
    p += size
  }
  const out = Buffer.allocUnsafe(total)
  let d = 0
  for (const b of blocks) {
    decodeElements(src, b.at, b.end, out, d, b.length)
    d += b.length
  }
  return out
}

/**
 * The four record-batch codecs behind one interface. gzip and zstd come from node:zlib (an import
 * this folder is allowed for compression, see tools/tidy.ts), snappy and lz4 from our own pure-TS
 * codecs (chosen by measurement over the npm candidates, see docs/decisions.md). Every decompression
 * is bounded by the caller's `maxBytes`.
 */
import { constants as bufferConstants } from 'node:buffer'
import { constants, gunzipSync, gzipSync, zstdCompressSync, zstdDecompressSync } from 'node:zlib'
import { Compression, type CompressionCodec } from './batch-header.ts'
import { CompressionError } from './compression-error.ts'
import { lz4CompressFrame, lz4DecompressFrame } from './lz4.ts'
import {
  isXerialFramed,
  snappyCompressXerial,
  snappyDecompressRaw,
  snappyDecompressXerial,
} from './snappy.ts'

/** Kafka's defaults: gzip's Deflater default (6) and zstd level 3 (CompressionType, KIP-390). */
export const GZIP_LEVEL_DEFAULT = 6
export const ZSTD_LEVEL_DEFAULT = 3

export interface CompressOptions {
  /** gzip 1-9, zstd 1-22; ignored by snappy and lz4. */
  level?: number
}

/**
 * Compress a batch's records section with `codec`, in the stream format Kafka's Java client writes:
 * a gzip member, xerial-framed snappy, an LZ4 frame with independent 64 KiB blocks, a zstd frame.
 * `Compression.none` returns `data` itself.
 */
export function compress(codec: CompressionCodec, data: Buffer, options: CompressOptions = {}): Buffer {
  switch (codec) {
    case Compression.none:
      return data
    case Compression.gzip:
      return gzipSync(data, { level: options.level ?? GZIP_LEVEL_DEFAULT })
    case Compression.snappy:
      return snappyCompressXerial(data)
    case Compression.lz4:
      return lz4CompressFrame(data)
    case Compression.zstd:
      return zstdCompressSync(data, {
        params: { [constants.ZSTD_c_compressionLevel]: options.level ?? ZSTD_LEVEL_DEFAULT },
      })
    default:
      throw new CompressionError('unsupported', `unknown compression codec ${codec as number}`)
  }
}

/**
 * Decompress `data` compressed with `codec`, producing at most `maxBytes` bytes: anything larger
 * fails with `CompressionError('too-large')` before more than `maxBytes` is held, so a decompression
 * bomb costs at most that much memory. Invalid input fails with `CompressionError('corrupt')`.
 * Snappy accepts both xerial framing and a raw block. `Compression.none` returns `data` if it fits.
 */
export function decompress(codec: CompressionCodec, data: Buffer, maxBytes: number): Buffer {
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) {
    throw new RangeError(`maxBytes must be a non-negative integer, got ${maxBytes}`)
  }
  switch (codec) {
    case Compression.none:
      if (data.length > maxBytes) throw tooLarge('none', maxBytes)
      return data
    case Compression.gzip:
      return zlibBounded('gzip', maxBytes, () => gunzipSync(data, zlibLimit(maxBytes)))
    case Compression.snappy:
      return isXerialFramed(data)
        ? snappyDecompressXerial(data, maxBytes)
        : snappyDecompressRaw(data, maxBytes)
    case Compression.lz4:
      return lz4DecompressFrame(data, maxBytes)
    case Compression.zstd:
      return zlibBounded('zstd', maxBytes, () => zstdDecompressSync(data, zlibLimit(maxBytes)))
    default:
      throw new CompressionError('unsupported', `unknown compression codec ${codec as number}`)
  }
}

function tooLarge(name: string, maxBytes: number): CompressionError {
  return new CompressionError('too-large', `${name}: output exceeds ${maxBytes} bytes`)
}

/** zlib wants a limit in [1, buffer.constants.MAX_LENGTH]; the exact bound is rechecked on the result. */
function zlibLimit(maxBytes: number): { maxOutputLength: number } {
  return { maxOutputLength: Math.min(Math.max(1, maxBytes), bufferConstants.MAX_LENGTH) }
}

/** zlib's limit stops the inflater as soon as its output passes maxOutputLength. */
function zlibBounded(name: string, maxBytes: number, run: () => Buffer): Buffer {
  let out: Buffer
  try {
    out = run()
  } catch (e) {
    if (e instanceof RangeError && (e as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
      throw tooLarge(name, maxBytes)
    }
    throw new CompressionError('corrupt', `${name}: ${e instanceof Error ? e.message : String(e)}`)
  }
  if (out.length > maxBytes) throw tooLarge(name, maxBytes)
  return out
}

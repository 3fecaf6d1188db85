/**
 * CRC-32C (Castagnoli), the checksum of record batch v2. For inputs of at least `NATIVE_BYTES_MIN`:
 * Weir's own addon (`native/crc32c.c`: SSE4.2 on three interleaved streams, ~20 GB/s at 64 KiB,
 * ~0.1 us for a 1 KiB batch, a range call with no view) where it was built, else `@node-rs/crc32`
 * (~5-6 GB/s, ~0.3 us for 1 KiB); below that, or where neither loads, a pure-TS slicing-by-8 table
 * (~1.2 GB/s). Measured by bench/crc32c.ts; see docs/decisions.md.
 */
const POLY_REFLECTED = 0x82f63b78
const TABLE_COUNT = 8
/** 8 tables of 256: table k maps a byte to its CRC contribution k bytes further on (slicing-by-8). */
const TABLES = buildTables()

function buildTables(): Uint32Array {
  const t = new Uint32Array(TABLE_COUNT * 256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ POLY_REFLECTED : c >>> 1
    t[n] = c >>> 0
  }
  for (let n = 0; n < 256; n++) {
    let c = t[n]!
    for (let k = 1; k < TABLE_COUNT; k++) {
      c = t[c & 0xff]! ^ (c >>> 8)
      t[k * 256 + n] = c >>> 0
    }
  }
  return t
}

/**
 * CRC-32C of `buf` in pure TypeScript, continuing from `crc` (the value a previous call returned; 0
 * to start). Slicing-by-8: eight table lookups per 8 input bytes.
 */
export function crc32cPure(buf: Uint8Array, crc = 0): number {
  const t = TABLES
  let c = ~crc
  let i = 0
  const end = buf.length
  const end8 = end - (end & 7)
  for (; i < end8; i += 8) {
    const a = c ^ (buf[i]! | (buf[i + 1]! << 8) | (buf[i + 2]! << 16) | (buf[i + 3]! << 24))
    const b = buf[i + 4]! | (buf[i + 5]! << 8) | (buf[i + 6]! << 16) | (buf[i + 7]! << 24)
    c =
      t[1792 + (a & 0xff)]! ^
      t[1536 + ((a >>> 8) & 0xff)]! ^
      t[1280 + ((a >>> 16) & 0xff)]! ^
      t[1024 + (a >>> 24)]! ^
      t[768 + (b & 0xff)]! ^
      t[512 + ((b >>> 8) & 0xff)]! ^
      t[256 + ((b >>> 16) & 0xff)]! ^
      t[b >>> 24]!
  }
  for (; i < end; i++) c = t[(c ^ buf[i]!) & 0xff]! ^ (c >>> 8)
  return ~c >>> 0
}

type NativeCrc32c = (input: Uint8Array, initialState?: number) => number
/** Weir's addon: the CRC of `buffer[start, end)` continuing from `crc`. */
type RangeCrc32c = (buffer: Uint8Array, crc: number, start: number, end: number) => number
/** Weir's addon: where the run of whole v2 batches with right CRCs from `start` stops (see `crc32cBatchRun`). */
type BatchRun = (buffer: Uint8Array, start: number, end: number) => number

interface WeirNative {
  readonly crc32c: RangeCrc32c
  readonly crc32cBatches: BatchRun | null
}

/**
 * Weir's own addon (`native/crc32c.c`, built by `npm run build:native` into build/native/), or null
 * where it was not built (no C compiler, not x86-64 Linux, not yet built in this checkout), fails to
 * load, or lacks SSE4.2. Checked against the pure table on the check value and on ranges of every
 * length up to 3 x 8 KiB + 1 KiB (both of its interleaved block sizes, their ends and the tails).
 */
function loadWeirNative(): WeirNative | null {
  try {
    const addon: { exports: { crc32c?: unknown; crc32cBatches?: unknown } } = { exports: {} }
    // build/native/ of the checkout, from src/protocol/records/ or from the compiled dist/src/protocol/records/.
    const url = new URL('../../../build/native/crc32c.node', import.meta.url)
    const fromDist = new URL('../../../../build/native/crc32c.node', import.meta.url)
    try {
      process.dlopen(addon, decodeURIComponent(url.pathname))
    } catch {
      process.dlopen(addon, decodeURIComponent(fromDist.pathname))
    }
    if (typeof addon.exports.crc32c !== 'function') return null
    const candidate = addon.exports.crc32c as RangeCrc32c
    if (candidate(Buffer.from('123456789', 'latin1'), 0, 0, 9) !== 0xe3069283) return null
    const probe = new Uint8Array(3 * 8192 + 1024 + 8)
    for (let i = 0; i < probe.length; i++) probe[i] = (i * 2654435761) >>> 24
    for (let length = 0; length + 8 <= probe.length; length += length < 1024 ? 1 : 509) {
      const start = length & 7
      if (candidate(probe, 7, start, start + length) !== crc32cPure(probe.subarray(start, start + length), 7))
        return null
    }
    const batches =
      typeof addon.exports.crc32cBatches === 'function' ? (addon.exports.crc32cBatches as BatchRun) : null
    return { crc32c: candidate, crc32cBatches: batches !== null && batchRunAgrees(batches) ? batches : null }
  } catch {
    return null
  }
}

/**
 * The @node-rs/crc32 addon, or null where its prebuilt addon does not exist for this platform or
 * fails to load (napi-rs loaders throw then). A dynamic import, awaited at module load, so that a
 * failure falls back instead of failing every importer.
 */
async function loadNodeRs(): Promise<NativeCrc32c | null> {
  try {
    const mod: { crc32c?: unknown; default?: { crc32c?: unknown } } = await import('@node-rs/crc32')
    const fn = mod.crc32c ?? mod.default?.crc32c
    if (typeof fn !== 'function') return null
    const candidate = fn as NativeCrc32c
    // Refuse a native build that disagrees with the reference check value.
    return candidate(Buffer.from('123456789', 'latin1')) === 0xe3069283 ? candidate : null
  } catch {
    return null
  }
}

/** v2 framing, as batch-header.ts has it (not imported: this module stands alone). */
const BATCH_LENGTH_AT = 8
const CRC_AT = 17
const CRC_FROM = 21
const HEADER_BYTES = 61

/** Three batch-shaped runs (lengths 61, 1000 and 3 x 8 KiB + 5), right, then each broken in turn. */
function batchRunAgrees(run: BatchRun): boolean {
  const sizes = [HEADER_BYTES, 1000, 3 * 8192 + 5]
  const buf = new Uint8Array(sizes.reduce((a, b) => a + b, 0) + 7)
  const view = new DataView(buf.buffer)
  for (let i = 0; i < buf.length; i++) buf[i] = (i * 2654435761) >>> 24
  const starts: number[] = []
  let at = 0
  for (const size of sizes) {
    starts.push(at)
    view.setInt32(at + BATCH_LENGTH_AT, size - 12)
    view.setUint32(at + CRC_AT, crc32cPure(buf.subarray(at + CRC_FROM, at + size)))
    at += size
  }
  if (run(buf, 0, at) !== at || run(buf, 0, at + 7) !== at || run(buf, 0, at - 1) !== starts[2]) return false
  for (let i = 0; i < sizes.length; i++) {
    const flip = starts[i]! + sizes[i]! - 1
    buf[flip] = buf[flip]! ^ 1
    const stopped = run(buf, 0, at)
    buf[flip] = buf[flip]! ^ 1
    if (stopped !== starts[i]) return false
  }
  return run(buf, starts[1]!, at) === at
}

const weirNative = loadWeirNative()
const nodeRs = weirNative === null ? await loadNodeRs() : null
/** The native call as a range one (@node-rs takes a view: one is made per call). */
const native: RangeCrc32c | null =
  weirNative?.crc32c ??
  (nodeRs === null ? null : (buffer, crc, start, end) => nodeRs(buffer.subarray(start, end) as Buffer, crc))

/**
 * Below this many bytes the pure-TS table beats the native call's fixed cost (measured:
 * bench/crc32c.ts; Weir's addon costs ~70 ns a call, @node-rs/crc32's ~100 ns and a view).
 */
export const NATIVE_BYTES_MIN = weirNative !== null ? 128 : 256

/**
 * Which implementation `crc32c` uses for large inputs: Weir's addon ('weir-native'),
 * @node-rs/crc32 ('node-rs'), or the pure-TS table ('pure').
 */
export const CRC32C_IMPLEMENTATION: 'weir-native' | 'node-rs' | 'pure' =
  weirNative !== null ? 'weir-native' : nodeRs !== null ? 'node-rs' : 'pure'

/**
 * Where a run of record batches (v2 framing: the int32 batchLength at +8, the uint32 CRC at +17 over
 * +21..end), from `start`, stops: `end` when every batch up to it is whole and its CRC matches, else
 * the position of the first one cut short by `end` (or whose batchLength is below a header's), or
 * whose CRC does not match. Checks nothing else: the batches below the result need only their CRC
 * not computed again. One native call for all of them (instead of one per batch: ~70 ns each);
 * null where Weir's addon is not loaded.
 */
export const crc32cBatchRun: BatchRun | null = weirNative?.crc32cBatches ?? null

/**
 * CRC-32C of `buf` (unsigned 32-bit), continuing from `crc` (0 to start); pass a view
 * (`subarray`) for part of a buffer, or use `crc32cRange`.
 * Example: `crc32c(Buffer.from('123456789')) === 0xe3069283`, and
 * `crc32c(b.subarray(4), crc32c(b.subarray(0, 4))) === crc32c(b)`.
 */
export function crc32c(buf: Uint8Array, crc = 0): number {
  if (native === null || buf.length < NATIVE_BYTES_MIN) return crc32cPure(buf, crc)
  return native(buf, crc, 0, buf.length) >>> 0
}

/**
 * CRC-32C of `buf[start, end)`, continuing from `crc`: `crc32c(buf.subarray(start, end), crc)`
 * without making the view (~25-35 ns a call here, a tenth of a 1 KiB batch's CRC with Weir's addon).
 */
export function crc32cRange(buf: Uint8Array, start: number, end: number, crc = 0): number {
  if (native === null || end - start < NATIVE_BYTES_MIN) return crc32cPure(buf.subarray(start, end), crc)
  return native(buf, crc, start, end) >>> 0
}

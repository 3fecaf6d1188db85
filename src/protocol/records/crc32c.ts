/**
 * CRC-32C (Castagnoli), the checksum of record batch v2. Uses `@node-rs/crc32` (SSE4.2/PCLMUL,
 * measured ~6 GB/s on a 1 MiB batch here, see docs/decisions.md) for inputs of at least
 * `NATIVE_MIN_BYTES`, and a pure-TS slicing-by-8 table (~1.2 GB/s) below that, where the native call's
 * fixed cost dominates, or for everything if the native addon cannot load on this platform.
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

/**
 * The native implementation, or null where its prebuilt addon does not exist for this platform or
 * fails to load (napi-rs loaders throw then). A dynamic import, awaited at module load, so that a
 * failure falls back instead of failing every importer.
 */
async function loadNative(): Promise<NativeCrc32c | null> {
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

const native = await loadNative()

/** Below this many bytes the pure-TS table beats the native call's fixed cost (measured: bench/records.ts). */
export const NATIVE_MIN_BYTES = 256

/** Which implementation `crc32c` uses for large inputs: 'native' or 'pure'. */
export const CRC32C_IMPLEMENTATION: 'native' | 'pure' = native === null ? 'pure' : 'native'

/**
 * CRC-32C of `buf` (unsigned 32-bit), continuing from `crc` (0 to start); pass a view
 * (`subarray`) for part of a buffer.
 * Example: `crc32c(Buffer.from('123456789')) === 0xe3069283`, and
 * `crc32c(b.subarray(4), crc32c(b.subarray(0, 4))) === crc32c(b)`.
 */
export function crc32c(buf: Uint8Array, crc = 0): number {
  if (native === null || buf.length < NATIVE_MIN_BYTES) return crc32cPure(buf, crc)
  return native(buf, crc) >>> 0
}

/**
 * XXH32, the hash of the LZ4 frame format (header checksum, optional block and content checksums).
 * Pure TypeScript: the inputs it sees on our paths are a few bytes (the frame descriptor), or whole
 * blocks only when a producer asked for LZ4 checksums, which Kafka's and librdkafka's writers do not.
 */

const PRIME1 = 0x9e3779b1
const PRIME2 = 0x85ebca77
const PRIME3 = 0xc2b2ae3d
const PRIME4 = 0x27d4eb2f
const PRIME5 = 0x165667b1
const STRIPE_BYTES = 16

function rotl(x: number, r: number): number {
  return (x << r) | (x >>> (32 - r))
}

function readU32LE(buf: Uint8Array, i: number): number {
  return buf[i]! | (buf[i + 1]! << 8) | (buf[i + 2]! << 16) | (buf[i + 3]! << 24)
}

function round(acc: number, lane: number): number {
  return Math.imul(rotl((acc + Math.imul(lane, PRIME2)) | 0, 13), PRIME1)
}

/** XXH32 of `buf[start, end)` with `seed`, as an unsigned 32-bit number. */
export function xxhash32(buf: Uint8Array, seed = 0, start = 0, end = buf.length): number {
  let i = start
  const length = end - start
  let h: number
  if (length >= STRIPE_BYTES) {
    let v1 = (seed + PRIME1 + PRIME2) | 0
    let v2 = (seed + PRIME2) | 0
    let v3 = seed | 0
    let v4 = (seed - PRIME1) | 0
    const limit = end - STRIPE_BYTES
    for (; i <= limit; i += STRIPE_BYTES) {
      v1 = round(v1, readU32LE(buf, i))
      v2 = round(v2, readU32LE(buf, i + 4))
      v3 = round(v3, readU32LE(buf, i + 8))
      v4 = round(v4, readU32LE(buf, i + 12))
    }
    h = (rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18)) | 0
  } else {
    h = (seed + PRIME5) | 0
  }
  h = (h + length) | 0
  for (; i + 4 <= end; i += 4) {
    h = Math.imul(rotl((h + Math.imul(readU32LE(buf, i), PRIME3)) | 0, 17), PRIME4)
  }
  for (; i < end; i++) {
    h = Math.imul(rotl((h + Math.imul(buf[i]!, PRIME5)) | 0, 11), PRIME1)
  }
  h ^= h >>> 15
  h = Math.imul(h, PRIME2)
  h ^= h >>> 13
  h = Math.imul(h, PRIME3)
  h ^= h >>> 16
  return h >>> 0
}

import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { CompressionError } from './compression-error.ts'
import { GOLDEN_URL, type Golden, jsonPayload, noise } from './fixtures/golden.ts'
import {
  LZ4_BLOCK_BYTES_MAX,
  lz4BlockBound,
  lz4CompressBlock,
  lz4CompressFrame,
  lz4DecompressBlock,
  lz4DecompressFrame,
} from './lz4.ts'
import { xxhash32 } from './xxhash32.ts'

const golden = JSON.parse(readFileSync(GOLDEN_URL, 'utf8')) as Golden

const LIMIT = 16 << 20

function kind(f: () => unknown): string {
  try {
    f()
    return 'ok'
  } catch (e) {
    assert.ok(e instanceof CompressionError, `expected CompressionError, got ${String(e)}`)
    return e.kind
  }
}

describe('lz4 frame', () => {
  it('round-trips any bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 3000 }), (bytes) => {
        const data = Buffer.from(bytes)
        assert.deepEqual(lz4DecompressFrame(lz4CompressFrame(data), LIMIT), data)
      }),
      { numRuns: 200 },
    )
  })

  it('round-trips repetitive data, many blocks, and incompressible data', () => {
    const random = noise(100_000)
    for (const data of [
      Buffer.alloc(0),
      Buffer.alloc(300_000, 7),
      jsonPayload(1 << 20),
      random,
      Buffer.from('abcabcabcabcabcabcabcabcabcabcabcabc'),
    ]) {
      const frame = lz4CompressFrame(data)
      assert.deepEqual(lz4DecompressFrame(frame, LIMIT), data)
    }
  })

  it('writes the header Kafka writes: independent blocks, 64 KiB, correct checksum', () => {
    const data = jsonPayload(200_000)
    const frame = lz4CompressFrame(data)
    assert.equal(frame.readUInt32LE(0), 0x184d2204)
    assert.equal(frame[4], 0x60, 'FLG: version 01, block independence, no checksums, no size')
    assert.ok((frame[4]! & 0x20) !== 0, 'independent-blocks flag')
    assert.equal(frame[5], 0x40, 'BD: 64 KiB blocks')
    assert.equal(frame[6], (xxhash32(frame, 0, 4, 6) >>> 8) & 0xff)
    // Walk the blocks: none over 64 KiB, and each decodes alone into a fresh buffer, where no match
    // can reach back into an earlier block (independence).
    const parts: Buffer[] = []
    let p = 7
    for (;;) {
      const header = frame.readUInt32LE(p)
      p += 4
      if (header === 0) break
      const size = header & 0x7fffffff
      assert.ok(size <= LZ4_BLOCK_BYTES_MAX)
      if (header >>> 31 === 1) parts.push(frame.subarray(p, p + size))
      else {
        const out = Buffer.alloc(LZ4_BLOCK_BYTES_MAX)
        parts.push(out.subarray(0, lz4DecompressBlock(frame, p, p + size, out, 0, out.length)))
      }
      p += size
    }
    assert.equal(p, frame.length)
    assert.ok(parts.length > 1)
    assert.deepEqual(Buffer.concat(parts), data)
  })

  it('stores an incompressible block raw (high bit)', () => {
    const random = noise(1000)
    const frame = lz4CompressFrame(random)
    assert.equal(frame.readUInt32LE(7) >>> 31, 1)
    assert.deepEqual(lz4DecompressFrame(frame, LIMIT), random)
  })

  it('produces blocks within lz4BlockBound', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2000 }), (bytes) => {
        const out = new Uint8Array(lz4BlockBound(bytes.length))
        assert.ok(lz4CompressBlock(bytes, 0, bytes.length, out, 0) <= out.length)
      }),
      { numRuns: 100 },
    )
  })

  it('decodes frames written by python-lz4, with content size and with both checksums', () => {
    for (const v of golden.codecs.filter((c) => c.codec === 3)) {
      const out = lz4DecompressFrame(Buffer.from(v.compressed, 'hex'), LIMIT)
      if (v.plain !== undefined) assert.equal(out.toString('hex'), v.plain, v.name)
      else {
        assert.equal(out.length, v.plainBytes, v.name)
        assert.equal(createHash('sha256').update(out).digest('hex'), v.plainSha256, v.name)
      }
    }
  })

  it('refuses dependent blocks, as Kafka does', () => {
    const frame = Buffer.from(golden.lz4Dependent, 'hex')
    assert.equal(
      kind(() => lz4DecompressFrame(frame, LIMIT)),
      'unsupported',
    )
  })

  it('refuses a bad header checksum, bad magic, reserved bits, a dictionary id', () => {
    const frame = lz4CompressFrame(jsonPayload(1000))
    const bad = (mutate: (b: Buffer) => void) => {
      const b = Buffer.from(frame)
      mutate(b)
      return kind(() => lz4DecompressFrame(b, LIMIT))
    }
    assert.equal(
      bad((b) => {
        b[6] = b[6]! ^ 1
      }),
      'corrupt',
    )
    assert.equal(
      bad((b) => {
        b[0] = 0
      }),
      'corrupt',
    )
    const withFlg = (flg: number) =>
      bad((b) => {
        b[4] = flg
        b[6] = (xxhash32(b, 0, 4, 6) >>> 8) & 0xff
      })
    assert.equal(withFlg(0x62), 'corrupt', 'reserved bit 1')
    assert.equal(withFlg(0x61), 'unsupported', 'dictionary id')
    assert.equal(withFlg(0xa0), 'corrupt', 'version 10')
  })

  it('refuses content checksum and block checksum mismatches', () => {
    const v = golden.codecs.find((c) => c.name.includes('checksums'))!
    const frame = Buffer.from(v.compressed, 'hex')
    const lastByte = Buffer.from(frame)
    lastByte[lastByte.length - 1] = lastByte[lastByte.length - 1]! ^ 0xff
    assert.equal(
      kind(() => lz4DecompressFrame(lastByte, LIMIT)),
      'corrupt',
    )
    // A byte inside the first block's data: the block checksum catches it before decoding.
    const inBlock = Buffer.from(frame)
    inBlock[20] = inBlock[20]! ^ 0x55
    assert.equal(
      kind(() => lz4DecompressFrame(inBlock, LIMIT)),
      'corrupt',
    )
  })

  it('refuses output over maxBytes without allocating more (bomb)', () => {
    // 64 MiB of zeros compresses to ~250 KiB: a bomb against a 1 MiB limit.
    const bomb = lz4CompressFrame(Buffer.alloc(64 << 20))
    const before = process.memoryUsage().arrayBuffers
    assert.equal(
      kind(() => lz4DecompressFrame(bomb, 1 << 20)),
      'too-large',
    )
    assert.ok(process.memoryUsage().arrayBuffers - before < 8 << 20)
    // A declared content size over the limit is refused before decoding.
    const v = golden.codecs.find((c) => c.name.includes('content size'))!
    assert.equal(
      kind(() => lz4DecompressFrame(Buffer.from(v.compressed, 'hex'), 100)),
      'too-large',
    )
    // Exactly at the limit is fine.
    const data = jsonPayload(5000)
    assert.deepEqual(lz4DecompressFrame(lz4CompressFrame(data), 5000), data)
    assert.equal(
      kind(() => lz4DecompressFrame(lz4CompressFrame(data), 4999)),
      'too-large',
    )
  })

  it('never throws anything but CompressionError on mutated or truncated frames', () => {
    const frame = lz4CompressFrame(jsonPayload(4000))
    fc.assert(
      fc.property(fc.nat(), fc.integer({ min: 1, max: 255 }), fc.nat(), (at, xor, cut) => {
        const b = Buffer.from(frame)
        const i = at % b.length
        b[i] = b[i]! ^ xor
        kind(() => lz4DecompressFrame(b, LIMIT))
        kind(() => lz4DecompressFrame(frame.subarray(0, cut % frame.length), LIMIT))
      }),
      { numRuns: 500 },
    )
  })

  it('refuses trailing bytes and a missing end mark', () => {
    const frame = lz4CompressFrame(jsonPayload(100))
    assert.equal(
      kind(() => lz4DecompressFrame(Buffer.concat([frame, Buffer.from([0])]), LIMIT)),
      'corrupt',
    )
    assert.equal(
      kind(() => lz4DecompressFrame(frame.subarray(0, frame.length - 4), LIMIT)),
      'corrupt',
    )
  })
})

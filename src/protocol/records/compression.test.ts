import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { zstdCompressSync } from 'node:zlib'
import fc from 'fast-check'
import { Compression, type CompressionCodec } from './batch-header.ts'
import { compress, decompress } from './compression.ts'
import { CompressionError } from './compression-error.ts'
import { GOLDEN_URL, type Golden, jsonPayload } from './fixtures/golden.ts'

const golden = JSON.parse(readFileSync(GOLDEN_URL, 'utf8')) as Golden

const CODECS: CompressionCodec[] = [
  Compression.none,
  Compression.gzip,
  Compression.snappy,
  Compression.lz4,
  Compression.zstd,
]
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

describe('compression', () => {
  it('round-trips every codec', () => {
    fc.assert(
      fc.property(fc.constantFrom(...CODECS), fc.uint8Array({ maxLength: 2000 }), (codec, bytes) => {
        const data = Buffer.from(bytes)
        assert.deepEqual(decompress(codec, compress(codec, data), LIMIT), data)
      }),
      { numRuns: 150 },
    )
    for (const codec of CODECS) {
      const data = jsonPayload(1 << 20)
      const packed = compress(codec, data)
      if (codec !== Compression.none) assert.ok(packed.length < data.length / 2, `codec ${codec} compresses`)
      assert.deepEqual(decompress(codec, packed, LIMIT), data)
    }
  })

  it('honours compression levels for gzip and zstd', () => {
    const data = jsonPayload(100_000)
    assert.ok(
      compress(Compression.gzip, data, { level: 1 }).length >
        compress(Compression.gzip, data, { level: 9 }).length,
    )
    assert.ok(
      compress(Compression.zstd, data, { level: 1 }).length >
        compress(Compression.zstd, data, { level: 19 }).length,
    )
  })

  it('decodes streams written by independent implementations', () => {
    for (const v of golden.codecs) {
      if (v.plain === undefined) continue
      const out = decompress(v.codec as CompressionCodec, Buffer.from(v.compressed, 'hex'), LIMIT)
      assert.equal(out.toString('hex'), v.plain, v.name)
    }
  })

  it('refuses decompression bombs for every codec', () => {
    const zeros = Buffer.alloc(32 << 20)
    for (const codec of CODECS) {
      const bomb = compress(codec, zeros)
      assert.equal(
        kind(() => decompress(codec, bomb, 1 << 20)),
        'too-large',
        `codec ${codec}`,
      )
    }
  })

  it('stops zstd at the limit without allocating the content the frame declares', () => {
    // The frame declares 1 MiB of content; a 4 KiB limit must not cost 1 MiB.
    const frame = zstdCompressSync(Buffer.alloc(1 << 20))
    const before = process.memoryUsage().arrayBuffers
    assert.equal(
      kind(() => decompress(Compression.zstd, frame, 4096)),
      'too-large',
    )
    assert.ok(process.memoryUsage().arrayBuffers - before < 1 << 20)
  })

  it('accepts output exactly at the limit, including empty output', () => {
    const data = jsonPayload(10_000)
    for (const codec of CODECS) {
      assert.deepEqual(decompress(codec, compress(codec, data), 10_000), data)
      assert.equal(
        kind(() => decompress(codec, compress(codec, data), 9_999)),
        'too-large',
      )
      assert.equal(decompress(codec, compress(codec, Buffer.alloc(0)), 0).length, 0)
    }
  })

  it('reports corrupt input as corrupt', () => {
    const garbage = Buffer.from('definitely not compressed data, no codec would accept this')
    for (const codec of [Compression.gzip, Compression.lz4, Compression.zstd] as const) {
      assert.equal(
        kind(() => decompress(codec, garbage, LIMIT)),
        'corrupt',
        `codec ${codec}`,
      )
    }
    for (const codec of [Compression.gzip, Compression.snappy, Compression.lz4, Compression.zstd] as const) {
      const packed = compress(codec, jsonPayload(5000))
      assert.equal(
        kind(() => decompress(codec, packed.subarray(0, packed.length - 3), LIMIT)),
        'corrupt',
      )
    }
  })

  it('refuses an unknown codec and a bad limit', () => {
    assert.equal(
      kind(() => decompress(5 as CompressionCodec, Buffer.alloc(1), LIMIT)),
      'unsupported',
    )
    assert.equal(
      kind(() => compress(7 as CompressionCodec, Buffer.alloc(1))),
      'unsupported',
    )
    assert.throws(() => decompress(Compression.none, Buffer.alloc(1), -1), RangeError)
  })
})

import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { CompressionError } from './compression-error.ts'
import { GOLDEN_URL, type Golden, jsonPayload, noise } from './fixtures/golden.ts'
import {
  isXerialFramed,
  snappyBound,
  snappyCompressRaw,
  snappyCompressXerial,
  snappyDecompressRaw,
  snappyDecompressXerial,
  XERIAL_BLOCK_BYTES,
} from './snappy.ts'

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

/** A xerial stream around raw blocks made elsewhere. */
function xerialOf(blocks: Buffer[]): Buffer {
  const header = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00, 0, 0, 0, 1, 0, 0, 0, 1])
  const parts: Buffer[] = [header]
  for (const b of blocks) {
    const len = Buffer.alloc(4)
    len.writeInt32BE(b.length)
    parts.push(len, b)
  }
  return Buffer.concat(parts)
}

describe('snappy', () => {
  it('round-trips any bytes, raw and xerial', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 3000 }), (bytes) => {
        const data = Buffer.from(bytes)
        const raw = snappyCompressRaw(data)
        assert.ok(raw.length <= snappyBound(data.length))
        assert.deepEqual(snappyDecompressRaw(raw, LIMIT), data)
        assert.deepEqual(snappyDecompressXerial(snappyCompressXerial(data), LIMIT), data)
      }),
      { numRuns: 200 },
    )
  })

  it('round-trips large, repetitive and incompressible data', () => {
    for (const data of [Buffer.alloc(300_000, 9), jsonPayload(1 << 20), noise(100_000), Buffer.alloc(0)]) {
      assert.deepEqual(snappyDecompressRaw(snappyCompressRaw(data), LIMIT), data)
      const x = snappyCompressXerial(data)
      assert.ok(isXerialFramed(x))
      assert.deepEqual(snappyDecompressXerial(x, LIMIT), data)
    }
  })

  it('writes snappy-java framing: magic, version 1, compat 1, 32 KiB blocks', () => {
    const x = snappyCompressXerial(jsonPayload(100_000))
    assert.equal(x.subarray(0, 8).toString('latin1'), '\x82SNAPPY\x00')
    assert.equal(x.readInt32BE(8), 1)
    assert.equal(x.readInt32BE(12), 1)
    let p = 16
    let blocks = 0
    while (p < x.length) {
      const size = x.readInt32BE(p)
      const block = x.subarray(p + 4, p + 4 + size)
      assert.ok(snappyDecompressRaw(block, LIMIT).length <= XERIAL_BLOCK_BYTES)
      p += 4 + size
      blocks++
    }
    assert.equal(blocks, Math.ceil(100_000 / XERIAL_BLOCK_BYTES))
  })

  it('decodes python-snappy raw blocks, alone and inside xerial framing', () => {
    const v = golden.codecs.find((c) => c.codec === 2)!
    const block = Buffer.from(v.compressed, 'hex')
    assert.equal(snappyDecompressRaw(block, LIMIT).toString('hex'), v.plain)
    const twice = snappyDecompressXerial(xerialOf([block, block]), LIMIT)
    assert.equal(twice.toString('hex'), v.plain! + v.plain!)
  })

  it('ignores the xerial version fields (some producers write them little-endian)', () => {
    const x = snappyCompressXerial(jsonPayload(1000))
    x.writeInt32LE(1, 8)
    x.writeInt32LE(1, 12)
    assert.deepEqual(snappyDecompressXerial(x, LIMIT), jsonPayload(1000))
  })

  it('refuses a raw block that declares more than maxBytes before allocating (bomb)', () => {
    // Preamble 0xffffffff (4 GiB), then nothing: must be refused on the preamble alone.
    const bomb = Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f, 0x00])
    assert.equal(
      kind(() => snappyDecompressRaw(bomb, LIMIT)),
      'too-large',
    )
    const real = snappyCompressRaw(Buffer.alloc(10 << 20))
    assert.equal(
      kind(() => snappyDecompressRaw(real, 1 << 20)),
      'too-large',
    )
    const blocks = snappyCompressXerial(Buffer.alloc(2 << 20))
    assert.equal(
      kind(() => snappyDecompressXerial(blocks, 1 << 20)),
      'too-large',
    )
    assert.equal(snappyDecompressXerial(blocks, 2 << 20).length, 2 << 20)
  })

  it('refuses a block whose output differs from its declared length', () => {
    const raw = snappyCompressRaw(Buffer.from('hello hello hello hello'))
    const longer = Buffer.from(raw)
    longer[0] = longer[0]! + 1
    assert.equal(
      kind(() => snappyDecompressRaw(longer, LIMIT)),
      'corrupt',
    )
    const shorter = Buffer.from(raw)
    shorter[0] = shorter[0]! - 1
    assert.equal(
      kind(() => snappyDecompressRaw(shorter, LIMIT)),
      'corrupt',
    )
  })

  it('refuses a copy that reaches before the output', () => {
    // length 8; copy-2 of 4 bytes at offset 1 with no output yet.
    assert.equal(
      kind(() => snappyDecompressRaw(Buffer.from([8, 0x0e, 0x01, 0x00]), LIMIT)),
      'corrupt',
    )
  })

  it('decodes a copy-4 element, which our encoder never writes', () => {
    // "abcd" then copy-4 (len 8, offset 4): "abcdabcdabcd".
    const block = Buffer.from([12, 0x0c, 0x61, 0x62, 0x63, 0x64, (7 << 2) | 3, 4, 0, 0, 0])
    assert.equal(snappyDecompressRaw(block, LIMIT).toString(), 'abcdabcdabcd')
  })

  it('never throws anything but CompressionError on mutated or truncated input', () => {
    const raw = snappyCompressRaw(jsonPayload(4000))
    const x = snappyCompressXerial(jsonPayload(40_000))
    fc.assert(
      fc.property(fc.nat(), fc.integer({ min: 1, max: 255 }), fc.nat(), (at, xor, cut) => {
        for (const src of [raw, x]) {
          const b = Buffer.from(src)
          const i = at % b.length
          b[i] = b[i]! ^ xor
          const decode = (s: Buffer) =>
            isXerialFramed(s) ? snappyDecompressXerial(s, LIMIT) : snappyDecompressRaw(s, LIMIT)
          kind(() => decode(b))
          kind(() => decode(src.subarray(0, cut % src.length)))
        }
      }),
      { numRuns: 300 },
    )
  })
})

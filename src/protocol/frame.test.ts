import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { AssertionError } from '../model/index.ts'
import { encodeFrame, FRAME_BYTES_MAX_DEFAULT, FrameError, FrameReader } from './frame.ts'

function header(size: number): Buffer {
  const b = Buffer.alloc(4)
  b.writeInt32BE(size, 0)
  return b
}

/** Push every chunk and drain after each, as a connection does. */
function readAll(reader: FrameReader, chunks: readonly Buffer[]): Buffer[] {
  const frames: Buffer[] = []
  for (const chunk of chunks) {
    reader.push(chunk)
    for (let f = reader.next(); f !== null; f = reader.next()) frames.push(f)
  }
  return frames
}

/** Cut `stream` at the given positions (any order, duplicates allowed: they give empty chunks). */
function split(stream: Buffer, cuts: readonly number[]): Buffer[] {
  const points = [0, ...[...cuts].sort((a, b) => a - b), stream.length]
  const chunks: Buffer[] = []
  // Copy each chunk into its own allocation, as a socket delivers it.
  for (let i = 1; i < points.length; i++) chunks.push(Buffer.from(stream.subarray(points[i - 1], points[i])))
  return chunks
}

/** Whether two views share any byte of memory. */
function overlaps(a: Buffer, b: Buffer): boolean {
  return (
    a.buffer === b.buffer && a.byteOffset < b.byteOffset + b.length && b.byteOffset < a.byteOffset + a.length
  )
}

const bodies = fc.array(
  fc.oneof(
    { weight: 1, arbitrary: fc.constant(new Uint8Array(0)) },
    { weight: 5, arbitrary: fc.uint8Array({ maxLength: 64 }) },
    { weight: 1, arbitrary: fc.uint8Array({ minLength: 1000, maxLength: 5000 }) },
  ),
  { maxLength: 12 },
)

const framedWithCuts = bodies.chain((bs) => {
  const stream = Buffer.concat(bs.map(encodeFrame))
  return fc.tuple(
    fc.constant(bs),
    fc.constant(stream),
    fc.array(fc.integer({ min: 0, max: stream.length }), { maxLength: 40 }),
  )
})

describe('FrameReader', () => {
  it('reads many frames from one chunk as views of it', () => {
    const chunk = Buffer.concat([
      encodeFrame(Buffer.from('abc')),
      encodeFrame(Buffer.alloc(0)),
      encodeFrame(Buffer.from('de')),
    ])
    const reader = new FrameReader()
    reader.push(chunk)
    const a = reader.next()!
    const empty = reader.next()!
    const b = reader.next()!
    assert.equal(reader.next(), null)
    assert.equal(a.toString(), 'abc')
    assert.equal(empty.length, 0)
    assert.equal(b.toString(), 'de')
    assert.equal(a.buffer, chunk.buffer)
    assert.equal(a.byteOffset, chunk.byteOffset + 4)
    assert.equal(b.byteOffset, chunk.byteOffset + 4 + 3 + 4 + 4)
    assert.equal(reader.bytesPending, 0)
  })

  it('reads a stream delivered one byte at a time', () => {
    const bs = [Buffer.from('hello'), Buffer.alloc(0), Buffer.from('x'), Buffer.alloc(300, 7)]
    const stream = Buffer.concat(bs.map(encodeFrame))
    const chunks = [...stream].map((byte) => Buffer.from([byte]))
    assert.deepEqual(readAll(new FrameReader(), chunks), bs)
  })

  it('returns a body that arrives whole in the chunk after its header as a view, without copying', () => {
    const reader = new FrameReader()
    reader.push(header(5).subarray(0, 3))
    assert.equal(reader.next(), null)
    reader.push(header(5).subarray(3))
    assert.equal(reader.next(), null)
    assert.equal(reader.bytesPending, 4)
    const body = Buffer.from('12345xyz')
    reader.push(body)
    const frame = reader.next()!
    assert.equal(frame.toString(), '12345')
    assert.equal(frame.buffer, body.buffer)
    assert.equal(frame.byteOffset, body.byteOffset)
    assert.equal(reader.next(), null)
    assert.equal(reader.bytesPending, 3)
  })

  it('assembles a spanning frame into one buffer of exactly its size', () => {
    const body = Buffer.alloc(10_000, 1)
    const stream = encodeFrame(body)
    const reader = new FrameReader()
    reader.push(Buffer.from(stream.subarray(0, 6)))
    assert.equal(reader.next(), null)
    assert.equal(reader.bytesPending, 6)
    reader.push(Buffer.from(stream.subarray(6, 5000)))
    assert.equal(reader.next(), null)
    reader.push(Buffer.from(stream.subarray(5000)))
    const frame = reader.next()!
    assert.deepEqual(frame, body)
    assert.equal(frame.length, 10_000)
    assert.equal(frame.buffer.byteLength, 10_000, 'allocated at the frame size, not grown')
    assert.equal(reader.bytesPending, 0)
  })

  it('assembles a spanning frame in the buffer spanBuffer gives, told its size and first bytes', () => {
    const body = Buffer.alloc(10_000, 2)
    body.writeInt16BE(0x0102, 0)
    const stream = Buffer.concat([encodeFrame(Buffer.from('small')), encodeFrame(body)])
    const given = Buffer.alloc(16_384)
    const asked: Array<[number, number]> = []
    const reader = new FrameReader({
      spanBuffer: (size, chunk, at) => {
        asked.push([size, chunk.readInt16BE(at)])
        return given
      },
    })
    reader.push(Buffer.from(stream.subarray(0, 20)))
    assert.equal(reader.next()?.toString(), 'small', 'a frame inside one chunk: no buffer asked')
    assert.equal(reader.next(), null)
    reader.push(Buffer.from(stream.subarray(20)))
    const frame = reader.next()!
    assert.deepEqual(asked, [[10_000, 0x0102]])
    assert.equal(frame.buffer, given.buffer, 'a view of the given buffer')
    assert.equal(frame.length, 10_000)
    assert.deepEqual(frame, body)
  })

  it('gives up a partly assembled frame, returning its buffer', () => {
    const stream = encodeFrame(Buffer.alloc(10_000, 3))
    const given = Buffer.alloc(10_000)
    const reader = new FrameReader({ spanBuffer: () => given })
    assert.equal(reader.abandonPartial(), null)
    reader.push(Buffer.from(stream.subarray(0, 5000)))
    assert.equal(reader.next(), null)
    assert.equal(reader.abandonPartial(), given)
    assert.equal(reader.abandonPartial(), null)
  })

  it('returns zero-length frames, including one whose header ends a chunk', () => {
    const reader = new FrameReader()
    reader.push(header(0))
    const frame = reader.next()
    assert.ok(frame !== null)
    assert.equal(frame.length, 0)
    assert.equal(reader.next(), null)
  })

  it('rejects an oversize frame when its header is seen, before the body', () => {
    const reader = new FrameReader({ frameBytesMax: 100 })
    reader.push(header(101))
    assert.throws(
      () => reader.next(),
      (e: unknown) => e instanceof FrameError && e.size === 101 && e.frameBytesMax === 100,
    )
    assert.throws(() => reader.next(), FrameError, 'the reader stays failed')
    const atMax = new FrameReader({ frameBytesMax: 100 })
    atMax.push(header(100))
    assert.equal(atMax.next(), null, 'a frame of exactly frameBytesMax is fine')
  })

  it('rejects an oversize header split byte by byte, on its fourth byte', () => {
    const reader = new FrameReader({ frameBytesMax: 1000 })
    const h = header(1001)
    for (let i = 0; i < 3; i++) {
      reader.push(h.subarray(i, i + 1))
      assert.equal(reader.next(), null)
    }
    reader.push(h.subarray(3))
    assert.throws(() => reader.next(), FrameError)
  })

  it('rejects the default maximum plus one and negative sizes', () => {
    for (const size of [FRAME_BYTES_MAX_DEFAULT + 1, -1, -(2 ** 31), 2 ** 31 - 1]) {
      const reader = new FrameReader()
      reader.push(header(size))
      assert.throws(() => reader.next(), FrameError, String(size))
    }
  })

  it('rejects frames after good ones in the same chunk, having returned the good ones', () => {
    const reader = new FrameReader({ frameBytesMax: 10 })
    reader.push(Buffer.concat([encodeFrame(Buffer.from('ok')), header(11), Buffer.alloc(11)]))
    assert.equal(reader.next()?.toString(), 'ok')
    assert.throws(() => reader.next(), FrameError)
  })

  it('insists the previous chunk is drained before the next push', () => {
    const reader = new FrameReader()
    reader.push(Buffer.concat([encodeFrame(Buffer.from('a')), encodeFrame(Buffer.from('b'))]))
    assert.equal(reader.next()?.toString(), 'a')
    assert.throws(() => reader.push(Buffer.from([0])), AssertionError)
    assert.equal(reader.next()?.toString(), 'b')
    assert.equal(reader.next(), null)
    reader.push(Buffer.alloc(0))
    assert.equal(reader.next(), null)
  })

  it('rejects a bad frameBytesMax', () => {
    for (const bad of [-1, 1.5, 2 ** 31, Number.NaN]) {
      assert.throws(() => new FrameReader({ frameBytesMax: bad }), AssertionError, String(bad))
    }
  })

  it('any split of a concatenation of frames yields exactly the frames', () => {
    fc.assert(
      fc.property(framedWithCuts, ([bs, stream, cuts]) => {
        const frames = readAll(new FrameReader(), split(stream, cuts))
        assert.deepEqual(
          frames.map((f) => Buffer.from(f)),
          bs.map((b) => Buffer.from(b)),
        )
      }),
    )
  })

  it('copies only frames whose body spans chunks; holds at most one partial frame between chunks', () => {
    fc.assert(
      fc.property(framedWithCuts, ([bs, stream, cuts]) => {
        const chunks = split(stream, cuts)
        // Where each chunk and each body starts in the stream.
        const chunkStarts: number[] = []
        let at = 0
        for (const c of chunks) {
          chunkStarts.push(at)
          at += c.length
        }
        const bodyStarts: number[] = []
        at = 0
        for (const b of bs) {
          bodyStarts.push(at + 4)
          at += 4 + b.length
        }
        const reader = new FrameReader()
        let index = 0
        for (const [c, chunk] of chunks.entries()) {
          reader.push(chunk)
          for (let f = reader.next(); f !== null; f = reader.next()) {
            const start = bodyStarts[index]!
            const end = start + f.length
            const chunkStart = chunkStarts[c]!
            const inThisChunk = start >= chunkStart && end <= chunkStart + chunk.length
            if (f.length === 0) {
              // Empty frames carry no bytes; where they point does not matter.
            } else if (inThisChunk) {
              assert.equal(f.buffer, chunk.buffer, `frame ${index} should be a view`)
              assert.equal(f.byteOffset, chunk.byteOffset + (start - chunkStart))
            } else {
              // Small buffers share Node's pool, so compare memory ranges, not ArrayBuffers.
              assert.ok(
                !chunks.some((k) => overlaps(f, k)),
                `frame ${index} spans chunks and should be a copy`,
              )
              assert.equal(f.buffer.byteLength, f.length, 'a copy is allocated at exactly the frame size')
            }
            index++
          }
          // Between chunks: what is held is the unfinished frame's received bytes plus its header.
          const next = bs[index]
          const nextStart = bodyStarts[index] ?? stream.length
          const received = chunkStarts[c]! + chunk.length
          const expected = next === undefined ? 0 : received - (nextStart - 4)
          assert.equal(reader.bytesPending, expected)
          if (next !== undefined) assert.ok(reader.bytesPending <= 4 + next.length)
        }
        assert.equal(index, bs.length)
      }),
    )
  })

  it('lentChunks: every frame is its own memory, so the next read into the same buffer leaves it intact', () => {
    const reader = new FrameReader({ lentChunks: true })
    const lent = Buffer.alloc(64)
    const stream = Buffer.concat([
      encodeFrame(Buffer.from('one')),
      encodeFrame(Buffer.from('two')),
      header(10),
    ])
    stream.copy(lent)
    reader.push(lent.subarray(0, stream.length + 2)) // "two" whole, then half of a frame of 10
    lent.fill(0x61, stream.length, stream.length + 2)
    const got: Buffer[] = []
    for (let f = reader.next(); f !== null; f = reader.next()) got.push(f)
    lent.fill(0x62) // the socket's next read overwrites the buffer
    reader.push(lent.subarray(0, 8))
    for (let f = reader.next(); f !== null; f = reader.next()) got.push(f)
    assert.deepEqual(
      got.map((f) => f.toString()),
      ['one', 'two', 'aabbbbbbbb'],
    )
    for (const f of got) assert.ok(!overlaps(f, lent))
  })

  it('rejects an oversize frame before its body arrives, wherever the stream is cut', () => {
    fc.assert(
      fc.property(
        bodies,
        fc.integer({ min: 65, max: 2 ** 31 - 1 }),
        fc.array(fc.nat(), { maxLength: 20 }),
        (good, size, rawCuts) => {
          const bs = good.filter((b) => b.length <= 64)
          const prefix = Buffer.concat([...bs.map(encodeFrame), header(size)])
          const cuts = rawCuts.map((c) => c % (prefix.length + 1))
          const reader = new FrameReader({ frameBytesMax: 64 })
          const frames: Buffer[] = []
          let error: unknown = null
          for (const chunk of split(prefix, cuts)) {
            reader.push(chunk)
            try {
              for (let f = reader.next(); f !== null; f = reader.next()) frames.push(f)
            } catch (e) {
              error = e
              break
            }
          }
          // Thrown on the header alone: not one body byte was pushed.
          assert.ok(error instanceof FrameError)
          assert.equal(error.size, size)
          assert.equal(frames.length, bs.length)
        },
      ),
    )
  })
})

describe('encodeFrame', () => {
  it('prefixes the int32 big-endian size', () => {
    assert.deepEqual(encodeFrame(Buffer.from('ab')), Buffer.from([0, 0, 0, 2, 0x61, 0x62]))
    assert.deepEqual(encodeFrame(new Uint8Array(0)), Buffer.from([0, 0, 0, 0]))
  })
})

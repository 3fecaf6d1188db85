import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { xxhash32 } from './xxhash32.ts'

describe('xxhash32', () => {
  it('matches the reference implementation (python xxhash) for seeds 0 and 42', () => {
    const vectors: [string, number, number][] = [
      ['', 0x02cc5d05, 0xd5be6eb8],
      ['a', 0x550d7456, 0x4bedc2db],
      ['abc', 0x32d153ff, 0x0147abfe],
      ['123456789', 0x937bad67, 0x8b369000],
      ['Nobody inspects the spammish repetition', 0xe2293b2f, 0x4ae5ae3a],
      ['x'.repeat(100), 0x4bd30d3a, 0xd7709c4d],
    ]
    for (const [text, seed0, seed42] of vectors) {
      assert.equal(xxhash32(Buffer.from(text)), seed0, text)
      assert.equal(xxhash32(Buffer.from(text), 42), seed42, text)
    }
  })

  it('hashes a sub-range like the same bytes on their own', () => {
    const buf = Buffer.from('--Nobody inspects the spammish repetition--')
    assert.equal(xxhash32(buf, 0, 2, buf.length - 2), 0xe2293b2f)
  })
})

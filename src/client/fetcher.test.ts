import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Compression, type CompressionCodec, encodeBatch, setBaseOffset } from '../protocol/index.ts'
import { countRecords, decodeRecords, nextOffset } from './fetcher.ts'

function batch(base: bigint, values: string[], compression: CompressionCodec = Compression.none): Buffer {
  const b = encodeBatch({ records: values.map((v) => ({ value: Buffer.from(v) })), compression })
  setBaseOffset(b, 0, base)
  return b
}

test('positions move past whole batches; records before the fetch offset are skipped; a partial batch waits', () => {
  const bytes = Buffer.concat([batch(10n, ['a', 'b', 'c']), batch(13n, ['d', 'e'], Compression.lz4)])
  assert.equal(nextOffset(bytes, 11n), 15n)
  assert.equal(countRecords(bytes, 11n), 4)
  assert.deepEqual(
    [...decodeRecords(bytes, 11n)].map((r) => [r.offset, r.value!.toString()]),
    [
      [11n, 'b'],
      [12n, 'c'],
      [13n, 'd'],
      [14n, 'e'],
    ],
  )
  const partial = bytes.subarray(0, bytes.length - 3)
  assert.equal(nextOffset(partial, 10n), 13n)
  assert.equal(countRecords(partial, 10n), 3)
  assert.equal([...decodeRecords(partial, 10n)].length, 3)
  assert.equal(nextOffset(Buffer.alloc(0), 7n), 7n)
})

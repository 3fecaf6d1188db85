import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { test } from 'node:test'
import fc from 'fast-check'
import { murmur2 } from './murmur2.ts'
import { partitionForKey } from './producer.ts'

// kafkajs's port of Kafka's Utils.murmur2 (its default partitioner's hash): the reference.
const kafkajsMurmur2 = createRequire(import.meta.url)(
  'kafkajs/src/producer/partitioners/default/murmur2.js',
) as (key: Buffer) => number

test('murmur2 matches kafkajs (a port of Kafka Utils.murmur2) on every length and byte', () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
      assert.equal(murmur2(bytes), kafkajsMurmur2(Buffer.from(bytes)))
    }),
    { numRuns: 2000 },
  )
})

test("Kafka's known values: the default partitioner puts these keys where the Java client does", () => {
  // From Kafka's UtilsTest.testMurmur2 (the hash of these strings' UTF-8 bytes).
  const cases: Array<[string, number]> = [
    ['21', -973932308],
    ['foobar', -790332482],
    ['a-little-bit-long-string', -985981536],
    ['a-little-bit-longer-string', -1486304829],
    ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971],
    ['abc', 479470107],
  ]
  for (const [s, h] of cases) assert.equal(murmur2(Buffer.from(s)), h, s)
  assert.equal(partitionForKey(Buffer.from('foobar'), 6), (-790332482 & 0x7fffffff) % 6)
})

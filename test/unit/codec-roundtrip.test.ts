/**
 * Round trips for every schema and every version: a value drawn from the JSON schema encodes,
 * decodes to the same fields and re-encodes to the same bytes.
 */
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { test } from 'node:test'
import fc from 'fast-check'
import * as generated from '../../src/protocol/generated/index.ts'
import { Reader } from '../../src/protocol/wire/reader.ts'
import { Writer } from '../../src/protocol/wire/writer.ts'
import { kafkaSchemaDir } from '../../tools/codegen/kafka-schemas.ts'
import { loadDir, type Schema } from '../../tools/codegen/schema.ts'
import { messageArbitrary, subsetMismatch } from './schema-arbitrary.ts'

const SCHEMA_DIR = await kafkaSchemaDir()
const RUNS = Number(process.env.ROUNDTRIP_RUNS ?? 15)

interface Codec {
  read: (r: Reader, v: number) => unknown
  write: (w: Writer, value: unknown, v: number) => void
}

function codecFor(schema: Schema): Codec {
  const ns = (generated as unknown as Record<string, Record<string, unknown>>)[`${schema.name}Data`]
  assert.ok(ns, `no generated module for ${schema.name}`)
  return {
    read: ns[`read${schema.name}`] as Codec['read'],
    write: ns[`write${schema.name}`] as Codec['write'],
  }
}

function encode(codec: Codec, value: unknown, v: number): Buffer {
  const w = new Writer(16)
  codec.write(w, value, v)
  return w.toBuffer()
}

for (const folder of ['messages', 'metadata', 'group-coordinator', 'transaction-coordinator', 'raft']) {
  test(`round trip: every ${folder} schema at every version`, () => {
    let pairs = 0
    for (const schema of loadDir(join(SCHEMA_DIR, folder))) {
      const codec = codecFor(schema)
      for (let v = schema.validVersions.min; v <= schema.validVersions.max; v++) {
        pairs++
        fc.assert(
          fc.property(messageArbitrary(schema, v), (value) => {
            const bytes = encode(codec, value, v)
            const r = new Reader(bytes)
            const decoded = codec.read(r, v)
            assert.equal(r.remaining, 0, `${schema.name} v${v}: bytes left over`)
            const mismatch = subsetMismatch(value, decoded)
            assert.equal(mismatch, null, `${schema.name} v${v}: ${mismatch}`)
            assert.ok(encode(codec, decoded, v).equals(bytes), `${schema.name} v${v}: re-encoding differs`)
          }),
          { numRuns: RUNS, seed: 42 + v },
        )
      }
    }
    assert.ok(pairs > 0)
  })
}

test('a field a version cannot carry is refused, an ignorable one is dropped', () => {
  const { JoinGroupRequestData: j, ApiVersionsRequestData: a } = generated
  // GroupInstanceId exists from v5 and is not ignorable: static membership cannot be sent to v4.
  assert.throws(
    () => j.writeJoinGroupRequest(new Writer(), { groupInstanceId: 'i-1' }, 4),
    /non-default value/,
  )
  // Left at its default (null) it is fine.
  j.writeJoinGroupRequest(new Writer(), { groupInstanceId: null }, 4)
  // ClientSoftwareName exists from v3 and is ignorable: v2 drops it.
  const w = new Writer()
  a.writeApiVersionsRequest(w, { clientSoftwareName: 'weir' }, 2)
  assert.equal(w.length, 0)
})

test('unknown tagged fields survive a decode and re-encode', () => {
  const { ApiVersionsRequestData: a } = generated
  // v3 body: compact strings "a" and "b", then two tagged fields 5 and 9 with 2 and 1 bytes.
  const bytes = Buffer.from([2, 0x61, 2, 0x62, 2, 5, 2, 0xaa, 0xbb, 9, 1, 0xcc])
  const decoded = a.readApiVersionsRequest(new Reader(bytes), 3)
  assert.equal(decoded.clientSoftwareName, 'a')
  assert.deepEqual(
    decoded._unknownTaggedFields?.map((t) => [t.tag, [...t.data]]),
    [
      [5, [0xaa, 0xbb]],
      [9, [0xcc]],
    ],
  )
  const w = new Writer()
  a.writeApiVersionsRequest(w, decoded, 3)
  assert.ok(w.toBuffer().equals(bytes))
})

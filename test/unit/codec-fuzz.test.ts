/**
 * Fuzzes the request decoder with random frames and with valid frames mutated: it may only ever
 * answer a value or throw DecodeError; never another error, never a hang.
 */
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { test } from 'node:test'
import fc from 'fast-check'
import { decodeRequest, encodeRequest } from '../../src/protocol/codec.ts'
import { apiByKey } from '../../src/protocol/generated/apis.ts'
import { DecodeError } from '../../src/protocol/wire/reader.ts'
import { kafkaSchemaDir } from '../../tools/codegen/kafka-schemas.ts'
import { loadDir } from '../../tools/codegen/schema.ts'
import { messageArbitrary } from './schema-arbitrary.ts'

const SCHEMA_DIR = await kafkaSchemaDir()
const RUNS = Number(process.env.FUZZ_RUNS ?? 3000)

function decodeSafely(frame: Buffer): void {
  try {
    decodeRequest(frame)
  } catch (e) {
    if (!(e instanceof DecodeError)) throw e
  }
}

test('random frames: only values or DecodeError', () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 256 }), (bytes) => decodeSafely(Buffer.from(bytes))),
    { numRuns: RUNS, seed: 1 },
  )
})

test('random frames with a valid header prefix: only values or DecodeError', () => {
  const keys = apiByKey.flatMap((api, key) => (api ? [{ key, max: api.maxVersion }] : []))
  const arb = fc
    .tuple(fc.constantFrom(...keys), fc.nat(), fc.uint8Array({ maxLength: 200 }))
    .map(([{ key, max }, n, rest]) => {
      const head = Buffer.alloc(8)
      head.writeInt16BE(key, 0)
      head.writeInt16BE(n % (max + 1), 2)
      head.writeInt32BE(n, 4)
      return Buffer.concat([head, rest])
    })
  fc.assert(
    fc.property(arb, (frame) => decodeSafely(frame)),
    { numRuns: RUNS, seed: 2 },
  )
})

test('valid requests, mutated: only values or DecodeError', () => {
  const requests = loadDir(join(SCHEMA_DIR, 'messages')).filter((s) => s.type === 'request')
  const frameArb = fc.constantFrom(...requests).chain((schema) => {
    const api = apiByKey[schema.apiKey!]!
    return fc
      .integer({ min: schema.validVersions.min, max: schema.validVersions.max })
      .chain((v) =>
        messageArbitrary(schema, v).map((body) =>
          Buffer.concat(
            encodeRequest(
              api as never,
              { requestApiVersion: v, correlationId: 7, clientId: 'fuzz' },
              body as never,
            ),
          ).subarray(4),
        ),
      )
  })
  const mutation = fc.oneof(
    fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), bits: fc.integer({ min: 1, max: 255 }) }),
    fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
    fc.record({ kind: fc.constant('huge' as const), at: fc.nat() }),
  )
  fc.assert(
    fc.property(frameArb, fc.array(mutation, { minLength: 1, maxLength: 4 }), (frame, mutations) => {
      // The unmutated frame must decode completely.
      const clean = decodeRequest(frame)
      assert.equal(clean.kind, 'ok')
      let bytes = Buffer.from(frame)
      for (const m of mutations) {
        if (bytes.length === 0) break
        const at = m.at % bytes.length
        if (m.kind === 'flip') bytes[at] = bytes[at]! ^ m.bits
        else if (m.kind === 'truncate') bytes = bytes.subarray(0, at)
        else if (at + 4 <= bytes.length) bytes.writeInt32BE(0x7ffffff0, at)
      }
      decodeSafely(bytes)
    }),
    { numRuns: RUNS, seed: 3 },
  )
})

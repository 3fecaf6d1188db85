/**
 * Golden bytes captured between real clients and a real Apache Kafka broker (tools/capture):
 * every frame decodes to the values its capture recorded, and re-encodes to the same bytes.
 */
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { test } from 'node:test'
import { decodeRequest, decodeResponse, encodeRequest, encodeResponse } from '../../src/protocol/codec.ts'
import { apiByKey } from '../../src/protocol/generated/apis.ts'
import { loadGoldenFixtures } from '../../tools/capture/fixtures.ts'

const GOLDEN_DIR = join(import.meta.dirname, '../fixtures/golden')
const fixtures = loadGoldenFixtures(GOLDEN_DIR)

/** Frames whose version is newer than the schemas Weir is generated from cannot be decoded here. */
function inSchema(apiKey: number, version: number): boolean {
  const api = apiByKey[apiKey]
  return api !== undefined && version >= api.minVersion && version <= api.maxVersion
}

/**
 * librdkafka 2.x asks Metadata v9+ for all topics with a 4-byte array count left unshrunk: Kafka,
 * and Weir, read the body from its first bytes and ignore the 3 after it
 * (codec-trailing-bytes.test.ts), so the re-encoding is the frame without them.
 */
function librdkafkaTrailingBytes(f: (typeof fixtures)[number], again: Buffer): boolean {
  return (
    /librdkafka/.test(f.meta.client ?? '') &&
    f.apiKey === 3 &&
    f.bytes.length === again.length + 3 &&
    f.bytes.subarray(0, again.length).equals(again)
  )
}

test('golden fixtures exist for several clients', () => {
  const clients = new Set(fixtures.map((f) => f.client))
  assert.ok(fixtures.length >= 50, `only ${fixtures.length} fixtures`)
  assert.ok(clients.size >= 3, `only ${[...clients].join(', ')}`)
})

test('golden requests decode to their recorded header and re-encode to the same bytes', () => {
  let checked = 0
  for (const f of fixtures.filter((x) => x.direction === 'request')) {
    if (!inSchema(f.apiKey, f.apiVersion)) continue
    const d = decodeRequest(f.bytes)
    assert.equal(d.kind, 'ok', f.file)
    if (d.kind !== 'ok') continue
    assert.equal(d.header.requestApiKey, f.apiKey, f.file)
    assert.equal(d.header.requestApiVersion, f.apiVersion, f.file)
    assert.equal(d.header.correlationId, f.correlationId, f.file)
    if (f.meta.clientId !== undefined) assert.equal(d.header.clientId, f.meta.clientId, f.file)
    const again = Buffer.concat(encodeRequest(d.api as never, d.header, d.body as never)).subarray(4)
    assert.ok(again.equals(f.bytes) || librdkafkaTrailingBytes(f, again), `${f.file}: re-encoding differs`)
    checked++
  }
  assert.ok(checked > 0)
})

test('golden responses decode and re-encode to the same bytes', () => {
  let checked = 0
  for (const f of fixtures.filter((x) => x.direction === 'response')) {
    if (!inSchema(f.apiKey, f.apiVersion)) continue
    const api = apiByKey[f.apiKey]!
    const { correlationId, body } = decodeResponse(api, f.apiVersion, f.bytes)
    assert.equal(correlationId, f.correlationId, f.file)
    const again = Buffer.concat(
      encodeResponse(api as never, f.apiVersion, correlationId, body as never),
    ).subarray(4)
    assert.ok(again.equals(f.bytes), `${f.file}: re-encoding differs`)
    checked++
  }
  assert.ok(checked > 0)
})

test('most golden frames are within the schemas Weir is generated from', () => {
  const outside = fixtures.filter((f) => !inSchema(f.apiKey, f.apiVersion))
  assert.ok(
    outside.length <= fixtures.length / 4,
    `${outside.length} of ${fixtures.length} frames use versions the schemas do not define: ${outside
      .slice(0, 5)
      .map((f) => f.file)
      .join(', ')}`,
  )
})

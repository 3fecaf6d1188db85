import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { TopicName } from '../../src/model/index.ts'
import {
  decodeRequest,
  decodeResponse,
  encodeRequest,
  encodeResponse,
  requestHeaderVersion,
  responseHeaderVersion,
} from '../../src/protocol/codec.ts'
import { apis } from '../../src/protocol/generated/apis.ts'
import { ErrorCode, errorInfo } from '../../src/protocol/generated/errors.ts'

test("header versions follow Kafka's rules", () => {
  assert.equal(requestHeaderVersion(apis.Produce, 8), 1)
  assert.equal(requestHeaderVersion(apis.Produce, 9), 2)
  assert.equal(requestHeaderVersion(apis.Metadata, 0), 1)
  assert.equal(responseHeaderVersion(apis.Produce, 9), 1)
  assert.equal(responseHeaderVersion(apis.Metadata, 0), 0)
  // ApiVersions answers with header v0 even when the request is flexible.
  assert.equal(responseHeaderVersion(apis.ApiVersions, 3), 0)
})

test('a flexible request: header v2 with a non-compact client id, then the body', () => {
  const frame = Buffer.concat(
    encodeRequest(
      apis.Metadata,
      { requestApiVersion: 12, correlationId: 99, clientId: 'abc' },
      { topics: [{ name: 't' as TopicName }], allowAutoTopicCreation: true },
    ),
  )
  assert.equal(frame.readInt32BE(0), frame.length - 4)
  // size, key 3, version 12, correlation 99, client id as int16 length + "abc", empty tags.
  assert.equal(frame.subarray(4, 18).toString('hex'), `0003000c00000063000361626300`)
  const d = decodeRequest(frame.subarray(4))
  assert.equal(d.kind, 'ok')
  if (d.kind !== 'ok') return
  assert.equal(d.header.clientId, 'abc')
  assert.equal(d.header.correlationId, 99)
  assert.deepEqual(
    (d.body as { topics: Array<{ name: string }> }).topics.map((t) => t.name),
    ['t'],
  )
})

test('unknown api keys and unsupported versions are values, not errors', () => {
  const head = Buffer.alloc(10)
  head.writeInt16BE(999, 0)
  assert.equal(decodeRequest(head).kind, 'unknown-api')
  head.writeInt16BE(apis.ApiVersions.apiKey, 0)
  head.writeInt16BE(apis.ApiVersions.maxVersion + 1, 2)
  const d = decodeRequest(head)
  assert.equal(d.kind, 'unsupported-version')
})

test('responses round-trip with their header', () => {
  const pieces = encodeResponse(apis.ApiVersions, 3, 5, {
    errorCode: ErrorCode.None,
    apiKeys: [{ apiKey: 0, minVersion: 0, maxVersion: 11 }],
  })
  const frame = Buffer.concat(pieces).subarray(4)
  const { correlationId, body } = decodeResponse(apis.ApiVersions, 3, frame)
  assert.equal(correlationId, 5)
  assert.equal(body.apiKeys[0]?.maxVersion, 11)
})

test('the error table is generated from errors.json', () => {
  assert.equal(ErrorCode.NotLeaderOrFollower, 6)
  assert.equal(errorInfo(6)?.name, 'NOT_LEADER_OR_FOLLOWER')
  assert.equal(errorInfo(6)?.retriable, true)
  assert.equal(errorInfo(12345), undefined)
})

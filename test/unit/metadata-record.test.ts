import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { TopicName, Uuid } from '../../src/model/index.ts'
import { metadataRecordTypes } from '../../src/protocol/generated/metadata-records.ts'
import { decodeMetadataRecord, encodeMetadataRecord } from '../../src/protocol/metadata-record.ts'
import { DecodeError } from '../../src/protocol/wire/reader.ts'

test('a TopicRecord frames as version 1, api key 2, record version 0', () => {
  const topicId = Buffer.alloc(16, 1).toString('base64url') as Uuid
  const value = encodeMetadataRecord(metadataRecordTypes.Topic, 0, { name: 'orders' as TopicName, topicId })
  assert.deepEqual([...value.subarray(0, 3)], [1, 2, 0])
  const d = decodeMetadataRecord(value)
  assert.equal(d.type.name, 'TopicRecord')
  assert.deepEqual(d.data, { name: 'orders', topicId })
})

test('unknown types, versions and frame versions are refused with DecodeError', () => {
  assert.throws(() => decodeMetadataRecord(Buffer.from([1, 99, 0])), DecodeError)
  assert.throws(() => decodeMetadataRecord(Buffer.from([1, 2, 9])), DecodeError)
  assert.throws(() => decodeMetadataRecord(Buffer.from([0, 2, 0])), DecodeError)
  assert.throws(() => decodeMetadataRecord(Buffer.from([1, 2])), DecodeError)
})

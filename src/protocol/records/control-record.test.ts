import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { DecodeError } from '../wire/reader.ts'
import { isControl, isTransactional, NO_SEQUENCE } from './batch-header.ts'
import {
  ControlRecordType,
  decodeControlKey,
  decodeEndTxnMarker,
  encodeControlKey,
  encodeEndTxnMarkerBatch,
  encodeEndTxnMarkerValue,
} from './control-record.ts'
import { decodeBatch } from './records.ts'

describe('control records', () => {
  it('encodes the key as version 0 + type, big-endian', () => {
    assert.equal(encodeControlKey(ControlRecordType.abort).toString('hex'), '00000000')
    assert.equal(encodeControlKey(ControlRecordType.commit).toString('hex'), '00000001')
    assert.deepEqual(decodeControlKey(encodeControlKey(ControlRecordType.leaderChange)), {
      version: 0,
      type: 2,
    })
  })

  it('encodes the marker value as version 0 + coordinatorEpoch', () => {
    assert.equal(encodeEndTxnMarkerValue(5).toString('hex'), '000000000005')
  })

  it('round-trips commit and abort marker batches', () => {
    for (const type of [ControlRecordType.abort, ControlRecordType.commit] as const) {
      const buf = encodeEndTxnMarkerBatch({
        marker: { type, coordinatorEpoch: 17 },
        producerId: 4242n,
        producerEpoch: 3,
        timestamp: 1_700_000_000_000n,
        baseOffset: 50n,
        partitionLeaderEpoch: 2,
      })
      const { header, records } = decodeBatch(buf)
      assert.ok(isControl(header.attributes))
      assert.ok(isTransactional(header.attributes))
      assert.equal(header.producerId, 4242n)
      assert.equal(header.producerEpoch, 3)
      assert.equal(header.baseSequence, NO_SEQUENCE)
      assert.equal(header.baseTimestamp, 1_700_000_000_000n)
      assert.equal(header.maxTimestamp, 1_700_000_000_000n)
      assert.equal(records.length, 1)
      assert.deepEqual(decodeEndTxnMarker(records[0]!), { type, coordinatorEpoch: 17 })
    }
  })

  it('tolerates newer versions with extra bytes, as Kafka does', () => {
    const key = Buffer.from('0001000100ff', 'hex')
    assert.deepEqual(decodeControlKey(key), { version: 1, type: 1 })
    const value = Buffer.from('0001000000070000', 'hex')
    assert.deepEqual(decodeEndTxnMarker({ key, value }), { type: 1, coordinatorEpoch: 7 })
  })

  it('refuses short or negative-version keys and values, and non-marker types', () => {
    assert.throws(() => decodeControlKey(null), DecodeError)
    assert.throws(() => decodeControlKey(Buffer.from('0000', 'hex')), DecodeError)
    assert.throws(() => decodeControlKey(Buffer.from('ffff0000', 'hex')), DecodeError)
    const commit = encodeControlKey(ControlRecordType.commit)
    assert.throws(() => decodeEndTxnMarker({ key: commit, value: null }), DecodeError)
    assert.throws(
      () => decodeEndTxnMarker({ key: commit, value: Buffer.from('00000000', 'hex') }),
      DecodeError,
    )
    assert.throws(
      () => decodeEndTxnMarker({ key: commit, value: Buffer.from('ffff00000000', 'hex') }),
      DecodeError,
    )
    assert.throws(
      () =>
        decodeEndTxnMarker({
          key: encodeControlKey(ControlRecordType.snapshotHeader),
          value: encodeEndTxnMarkerValue(1),
        }),
      /not a transaction marker/,
    )
  })
})

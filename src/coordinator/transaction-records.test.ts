import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { DecodeError } from '../protocol/index.ts'
import {
  decodeTransactionLogRecord,
  encodeTransactionLogKey,
  encodeTransactionLogValue,
  type PersistedTransaction,
  TRANSACTION_STATES,
} from './transaction-records.ts'

const ongoing: PersistedTransaction = {
  producerId: 1000n,
  previousProducerId: -1n,
  nextProducerId: -1n,
  producerEpoch: 3,
  txnTimeoutMs: 60_000,
  state: 'Ongoing',
  partitions: [
    { topic: 'a', partition: 0 },
    { topic: 'a', partition: 2 },
    { topic: 'b', partition: 1 },
  ],
  txnStartTimestampMs: 1_700_000_000_000,
  txnLastUpdateTimestampMs: 1_700_000_000_500,
  clientTransactionVersion: 0,
}

const persisted = fc
  .record({
    producerId: fc.bigInt({ min: 0n, max: 2n ** 63n - 1n }),
    previousProducerId: fc.bigInt({ min: -1n, max: 2n ** 63n - 1n }),
    nextProducerId: fc.bigInt({ min: -1n, max: 2n ** 63n - 1n }),
    producerEpoch: fc.integer({ min: 0, max: 32767 }),
    txnTimeoutMs: fc.integer({ min: 1, max: 2 ** 31 - 1 }),
    state: fc.constantFrom(...TRANSACTION_STATES),
    topics: fc.dictionary(
      fc.string({ minLength: 1, maxLength: 8 }),
      fc.uniqueArray(fc.nat(99), { maxLength: 4 }),
    ),
    txnStartTimestampMs: fc.integer({ min: -1, max: 2 ** 45 }),
    txnLastUpdateTimestampMs: fc.integer({ min: 0, max: 2 ** 45 }),
    clientTransactionVersion: fc.integer({ min: 0, max: 2 }),
  })
  .map(
    ({ topics, ...v }): PersistedTransaction => ({
      ...v,
      partitions:
        v.state === 'Empty'
          ? []
          : Object.entries(topics).flatMap(([topic, ids]) => ids.map((partition) => ({ topic, partition }))),
    }),
  )

describe('__transaction_state records', () => {
  test('the bytes of a key and a v0 value are TransactionLogKey v0 / TransactionLogValue v0', () => {
    assert.deepEqual(encodeTransactionLogKey('tx'), Buffer.from([0, 0, 0, 2, 0x74, 0x78]))
    const expected = Buffer.concat([
      Buffer.from([0, 0]), // version
      Buffer.from([0, 0, 0, 0, 0, 0, 0x03, 0xe8]), // producer id 1000
      Buffer.from([0, 3]), // epoch
      Buffer.from([0, 0, 0xea, 0x60]), // timeout 60000
      Buffer.from([1]), // Ongoing
      Buffer.from([0, 0, 0, 2]), // two topics
      Buffer.from([0, 1, 0x61, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 2]),
      Buffer.from([0, 1, 0x62, 0, 0, 0, 1, 0, 0, 0, 1]),
      bigint64(1_700_000_000_500n),
      bigint64(1_700_000_000_000n),
    ])
    assert.deepEqual(encodeTransactionLogValue(ongoing, 0), expected)
  })

  test('a v1 value is flexible and carries the tagged producer ids and client version', () => {
    const v = { ...ongoing, previousProducerId: 7n, nextProducerId: 9n, clientTransactionVersion: 2 }
    const bytes = encodeTransactionLogValue(v, 2)
    assert.ok(bytes !== null)
    assert.equal(bytes.readInt16BE(0), 1)
    assert.deepEqual(decodeTransactionLogRecord(encodeTransactionLogKey('t'), bytes), {
      transactionalId: 't',
      value: v,
    })
    // Level 0 writes v0, which cannot carry them: they read back as their defaults.
    const v0 = decodeTransactionLogRecord(encodeTransactionLogKey('t'), encodeTransactionLogValue(v, 0))
    assert.deepEqual(v0, {
      transactionalId: 't',
      value: { ...v, previousProducerId: -1n, nextProducerId: -1n, clientTransactionVersion: 0 },
    })
  })

  test('every value round-trips at v0 and v1; Empty writes null partitions', () => {
    fc.assert(
      fc.property(persisted, fc.string({ maxLength: 20 }), (value, id) => {
        const key = encodeTransactionLogKey(id)
        const v1 = decodeTransactionLogRecord(key, encodeTransactionLogValue(value, 1))
        assert.deepEqual(v1, { transactionalId: id, value })
        const v0 = decodeTransactionLogRecord(key, encodeTransactionLogValue(value, 0))
        assert.deepEqual(v0, {
          transactionalId: id,
          value: { ...value, previousProducerId: -1n, nextProducerId: -1n, clientTransactionVersion: 0 },
        })
      }),
    )
    const empty = encodeTransactionLogValue({ ...ongoing, state: 'Empty', partitions: [] }, 0)
    assert.ok(empty !== null)
    assert.equal(empty.readInt32BE(2 + 8 + 2 + 4 + 1), -1, 'null array')
  })

  test('tombstones, foreign keys, and corrupt values', () => {
    assert.equal(encodeTransactionLogValue(null, 1), null)
    assert.deepEqual(decodeTransactionLogRecord(encodeTransactionLogKey('x'), null), {
      transactionalId: 'x',
      value: null,
    })
    assert.deepEqual(decodeTransactionLogRecord(Buffer.from([0, 1, 0, 0]), null), {
      kind: 'foreign',
      keyVersion: 1,
      valueVersion: null,
    })
    const bytes = encodeTransactionLogValue(ongoing, 0)
    assert.ok(bytes !== null)
    const badState = Buffer.from(bytes)
    badState[2 + 8 + 2 + 4] = 8
    assert.throws(() => decodeTransactionLogRecord(encodeTransactionLogKey('x'), badState), DecodeError)
    assert.throws(
      () => decodeTransactionLogRecord(encodeTransactionLogKey('x'), bytes.subarray(0, bytes.length - 3)),
      DecodeError,
    )
    // A value of a version Kafka 4 does not read is skipped, as Kafka skips it.
    const v2 = Buffer.from(encodeTransactionLogValue(ongoing, 1) ?? Buffer.alloc(0))
    v2.writeInt16BE(2, 0)
    assert.deepEqual(decodeTransactionLogRecord(encodeTransactionLogKey('x'), v2), {
      kind: 'foreign',
      keyVersion: 0,
      valueVersion: 2,
    })
    assert.throws(() => encodeTransactionLogValue({ ...ongoing, state: 'Empty' }, 1), RangeError)
  })
})

function bigint64(n: bigint): Buffer {
  const b = Buffer.alloc(8)
  b.writeBigInt64BE(n)
  return b
}

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { EMPTY_IMAGE } from '../metadata/index.ts'
import type { BrokerId, Uuid } from '../model/index.ts'
import { ErrorCode, metadataRecordTypes as T } from '../protocol/index.ts'
import { allocateProducerIds, PRODUCER_ID_BLOCK_SIZE } from './producer-ids.ts'
import { commit } from './testing.ts'

const broker = commit(EMPTY_IMAGE, [
  {
    type: T.RegisterBroker as never,
    version: 0,
    data: {
      brokerId: 1 as BrokerId,
      brokerEpoch: 7n,
      incarnationId: Buffer.alloc(16, 1).toString('base64url') as Uuid,
    },
  },
])

test('blocks of 1000 ids follow one another, each recorded in a ProducerIdsRecord', () => {
  let image = broker
  const starts: bigint[] = []
  for (let i = 0; i < 3; i++) {
    const d = allocateProducerIds(image, { brokerId: 1 as BrokerId, brokerEpoch: 7n })
    assert.equal(d.response.errorCode, ErrorCode.None)
    assert.equal(d.response.producerIdLen, PRODUCER_ID_BLOCK_SIZE)
    starts.push(d.response.producerIdStart!)
    image = commit(image, d.records)
  }
  assert.deepEqual(starts, [0n, 1000n, 2000n])
  assert.equal(image.nextProducerId, 3000n)
})

test('an unknown broker or a stale broker epoch is STALE_BROKER_EPOCH, with no record', () => {
  for (const req of [
    { brokerId: 1 as BrokerId, brokerEpoch: 6n },
    { brokerId: 2 as BrokerId, brokerEpoch: 7n },
  ]) {
    const d = allocateProducerIds(broker, req)
    assert.equal(d.response.errorCode, ErrorCode.StaleBrokerEpoch)
    assert.equal(d.records.length, 0)
  }
})

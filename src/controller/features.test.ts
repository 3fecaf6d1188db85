import assert from 'node:assert/strict'
import { test } from 'node:test'
import { EMPTY_IMAGE } from '../metadata/index.ts'
import type { BrokerId, Uuid } from '../model/index.ts'
import { ErrorCode, metadataRecordTypes as T } from '../protocol/index.ts'
import { pendingRecord } from './decision.ts'
import { updateFeatures } from './features.ts'
import { commit } from './testing.ts'

const SUPPORTED = [
  { name: 'metadata.version', minVersion: 7, maxVersion: 25 },
  { name: 'transaction.version', minVersion: 0, maxVersion: 2 },
]

/** Features finalized at metadata.version 25 and transaction.version 2; broker 2 supports transaction.version 0-1 only. */
function image(broker2TxnMax = 1) {
  return commit(EMPTY_IMAGE, [
    pendingRecord(T.FeatureLevel, 0, { name: 'metadata.version', featureLevel: 25 }),
    pendingRecord(T.FeatureLevel, 0, { name: 'transaction.version', featureLevel: 1 }),
    ...[1, 2].map((id) =>
      pendingRecord(T.RegisterBroker, 3, {
        brokerId: id as BrokerId,
        brokerEpoch: BigInt(id),
        incarnationId: Buffer.alloc(16, id).toString('base64url') as Uuid,
        features: [
          { name: 'metadata.version', minSupportedVersion: 7, maxSupportedVersion: 25 },
          {
            name: 'transaction.version',
            minSupportedVersion: 0,
            maxSupportedVersion: id === 2 ? broker2TxnMax : 2,
          },
        ],
        fenced: false,
      }),
    ),
  ])
}

const update = (feature: string, maxVersionLevel: number, upgradeType = 1) => ({
  feature,
  maxVersionLevel,
  upgradeType,
  allowDowngrade: false,
})

test('UpdateFeatures: a level every registered broker supports is written; one a broker lacks is refused, naming it', () => {
  const refused = updateFeatures(
    { image: image(), nodeId: 1, supported: SUPPORTED },
    { timeoutMs: 0, featureUpdates: [update('transaction.version', 2)], validateOnly: false },
    1,
  )
  assert.deepEqual(refused.records, [])
  assert.equal(refused.response.errorCode, ErrorCode.InvalidUpdateVersion)
  assert.match(
    refused.response.errorMessage ?? '',
    /Invalid update version 2 for feature transaction\.version\. broker2 only supports versions 0-1$/,
  )
  const done = updateFeatures(
    { image: image(2), nodeId: 1, supported: SUPPORTED },
    { timeoutMs: 0, featureUpdates: [update('transaction.version', 2)], validateOnly: false },
    1,
  )
  assert.equal(done.response.errorCode, ErrorCode.None)
  assert.deepEqual(
    done.records.map((r) => r.data),
    [{ name: 'transaction.version', featureLevel: 2 }],
  )
  assert.equal(commit(image(2), done.records).features.get('transaction.version'), 2)
})

test('UpdateFeatures: a downgrade to 0 removes the feature; validateOnly and one bad update write nothing', () => {
  const ctx = { image: image(), nodeId: 1, supported: SUPPORTED }
  const removed = updateFeatures(
    ctx,
    { timeoutMs: 0, featureUpdates: [update('transaction.version', 0, 2)], validateOnly: false },
    1,
  )
  assert.equal(removed.response.errorCode, ErrorCode.None)
  assert.equal(commit(ctx.image, removed.records).features.has('transaction.version'), false)
  const validated = updateFeatures(
    ctx,
    { timeoutMs: 0, featureUpdates: [update('transaction.version', 0, 2)], validateOnly: true },
    1,
  )
  assert.deepEqual([validated.response.errorCode, validated.records.length], [ErrorCode.None, 0])
  const mixed = updateFeatures(
    ctx,
    {
      timeoutMs: 0,
      featureUpdates: [update('transaction.version', 0, 2), update('metadata.version', 24, 2)],
      validateOnly: false,
    },
    1,
  )
  assert.deepEqual(
    [mixed.response.errorCode, mixed.records.length, mixed.response.results],
    [ErrorCode.InvalidUpdateVersion, 0, []],
  )
})

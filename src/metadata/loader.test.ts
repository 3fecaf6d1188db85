import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { BrokerId, TopicName, Uuid } from '../model/index.ts'
import { encodeMetadataRecord, metadataRecordTypes as T } from '../protocol/index.ts'
import { type ImagePublication, imageToSnapshot, MetadataLoader } from './loader.ts'

const id = (n: number) => Buffer.alloc(16, n).toString('base64url') as Uuid
const data = (offset: bigint, value: Buffer) => ({ kind: 'data' as const, offset, epoch: 1, data: value })

test('committed entries become one image per batch; a snapshot of it rebuilds the same image', () => {
  const loader = new MetadataLoader()
  const seen: ImagePublication[] = []
  loader.subscribe((p) => seen.push(p))
  loader.applyCommitted([
    { kind: 'leaderChange', offset: 0n, epoch: 1, leaderId: 1 as BrokerId },
    data(1n, encodeMetadataRecord(T.FeatureLevel, 0, { name: 'metadata.version', featureLevel: 21 })),
    data(
      2n,
      encodeMetadataRecord(T.RegisterBroker, 3, {
        brokerId: 1 as BrokerId,
        brokerEpoch: 2n,
        incarnationId: id(7),
        rack: null,
        endPoints: [{ name: 'PLAINTEXT', host: 'h', port: 1, securityProtocol: 0 }],
        logDirs: [id(9)], // kept by the snapshot (v3)
      }),
    ),
    data(3n, encodeMetadataRecord(T.Topic, 0, { name: 't' as TopicName, topicId: id(1) })),
    data(
      4n,
      encodeMetadataRecord(T.Partition, 0, {
        topicId: id(1),
        partitionId: 0,
        replicas: [1 as BrokerId],
        isr: [1],
        leader: 1 as BrokerId,
        leaderEpoch: 0,
        partitionEpoch: 0,
      }),
    ),
    data(
      5n,
      encodeMetadataRecord(T.Config, 0, {
        resourceType: 2,
        resourceName: 't',
        name: 'retention.ms',
        value: '5',
      }),
    ),
    data(
      6n,
      encodeMetadataRecord(T.AccessControlEntry, 0, {
        id: id(3),
        resourceType: 2,
        resourceName: 't',
        patternType: 4,
        principal: 'User:alice',
        host: '*',
        operation: 3,
        permissionType: 3,
      }),
    ),
    data(
      7n,
      encodeMetadataRecord(T.UserScramCredential, 0, {
        name: 'alice',
        mechanism: 2,
        salt: Buffer.from('s'),
        storedKey: Buffer.from('k'),
        serverKey: Buffer.from('v'),
        iterations: 4096,
      }),
    ),
  ])
  assert.equal(seen.length, 1)
  assert.deepEqual(seen[0]!.leaderChanges, [{ epoch: 1, leaderId: 1, offset: 0n }])
  const image = loader.image
  assert.deepEqual(image.provenance, { offset: 7n, epoch: 1 })
  assert.equal(image.acls.size, 1)
  assert.equal(image.scramCredentials.get(2)?.size, 1)
  const other = new MetadataLoader()
  other.loadSnapshot(imageToSnapshot(image), image.provenance)
  assert.deepEqual(other.image, image)
})

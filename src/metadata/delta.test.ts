import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { BrokerId, TopicName, Uuid } from '../model/index.ts'
import {
  type DecodedMetadataRecord,
  decodeMetadataRecord,
  encodeMetadataRecord,
  metadataRecordTypes as T,
} from '../protocol/index.ts'
import { applyRecords, MetadataDelta, MetadataError } from './delta.ts'
import { ConfigResourceType, EMPTY_IMAGE, NO_LEADER, scramCredential } from './image.ts'

const id = (n: number): Uuid => Buffer.alloc(16, n).toString('base64url') as Uuid
const b = (n: number): BrokerId => n as BrokerId

/** Records go through the real codec, as they would from the log. */
function rec<TIn>(
  type: { apiKey: number; write: (w: never, v: TIn, ver: number) => void } & object,
  data: TIn,
): DecodedMetadataRecord {
  return decodeMetadataRecord(encodeMetadataRecord(type as never, 0, data as never))
}

const topic = (name: string, n: number) => rec(T.Topic, { name: name as TopicName, topicId: id(n) })
const partition = (n: number, p: number, replicas: number[], leader: number) =>
  rec(T.Partition, {
    topicId: id(n),
    partitionId: p,
    replicas: replicas.map(b),
    isr: replicas,
    leader: b(leader),
    leaderEpoch: 0,
    partitionEpoch: 0,
  })

test('topics and partitions appear; the base image never changes', () => {
  const image = applyRecords(EMPTY_IMAGE, [
    topic('orders', 1),
    partition(1, 0, [1, 2, 3], 1),
    partition(1, 1, [2, 3, 1], 2),
  ])
  assert.equal(EMPTY_IMAGE.topicsByName.size, 0)
  const t = image.topicsByName.get('orders' as TopicName)
  assert.equal(t?.id, id(1))
  assert.equal(image.topicsById.get(id(1)), t)
  assert.deepEqual(t?.partitions.get(1)?.replicas, [2, 3, 1])
  assert.equal(t?.partitions.get(0)?.leader, 1)
})

test('a leader change bumps the leader epoch; an ISR change bumps only the partition epoch', () => {
  const base = applyRecords(EMPTY_IMAGE, [topic('t', 1), partition(1, 0, [1, 2, 3], 1)])
  const shrunk = applyRecords(base, [
    rec(T.PartitionChange, { topicId: id(1), partitionId: 0, isr: [b(1), b(2)] }),
  ])
  const p1 = shrunk.topicsById.get(id(1))!.partitions.get(0)!
  assert.deepEqual([p1.isr, p1.leader, p1.leaderEpoch, p1.partitionEpoch], [[1, 2], 1, 0, 1])
  const moved = applyRecords(shrunk, [
    rec(T.PartitionChange, { topicId: id(1), partitionId: 0, leader: b(2) }),
  ])
  const p2 = moved.topicsById.get(id(1))!.partitions.get(0)!
  assert.deepEqual([p2.leader, p2.leaderEpoch, p2.partitionEpoch], [2, 1, 2])
  const none = applyRecords(moved, [
    rec(T.PartitionChange, { topicId: id(1), partitionId: 0, leader: NO_LEADER, isr: [] }),
  ])
  assert.equal(none.topicsById.get(id(1))!.partitions.get(0)!.leader, -1)
  // The earlier image is untouched.
  assert.equal(base.topicsById.get(id(1))!.partitions.get(0)!.partitionEpoch, 0)
})

test('removing a topic drops it and its configs, and reports it', () => {
  const base = applyRecords(EMPTY_IMAGE, [
    topic('t', 1),
    partition(1, 0, [1], 1),
    rec(T.Config, {
      resourceType: ConfigResourceType.Topic,
      resourceName: 't',
      name: 'retention.ms',
      value: '1000',
    }),
  ])
  assert.equal(base.configs.get('2:t')?.get('retention.ms'), '1000')
  const delta = new MetadataDelta(base)
  delta.replay(rec(T.RemoveTopic, { topicId: id(1) }))
  const { image, changes } = delta.apply()
  assert.equal(image.topicsByName.size, 0)
  assert.equal(image.configs.has('2:t'), false)
  assert.deepEqual(
    changes.deletedTopics.map((t) => t.name),
    ['t'],
  )
  // The name can be reused by a new topic id.
  const again = applyRecords(image, [topic('t', 2)])
  assert.equal(again.topicsByName.get('t' as TopicName)?.id, id(2))
})

test('brokers register, fence, unfence; a stale epoch is refused', () => {
  const reg = rec(T.RegisterBroker, {
    brokerId: b(1),
    brokerEpoch: 10n,
    incarnationId: id(9),
    endPoints: [{ name: 'PLAINTEXT', host: '127.0.0.1', port: 9092, securityProtocol: 0 }],
    rack: 'r1',
    fenced: true,
  })
  const image = applyRecords(EMPTY_IMAGE, [reg, rec(T.UnfenceBroker, { id: b(1), epoch: 10n })])
  assert.equal(image.brokers.get(b(1))?.fenced, false)
  assert.equal(image.brokers.get(b(1))?.endpoints[0]?.port, 9092)
  assert.throws(() => applyRecords(image, [rec(T.FenceBroker, { id: b(1), epoch: 9n })]), MetadataError)
  const fenced = applyRecords(image, [
    rec(T.BrokerRegistrationChange, { brokerId: b(1), brokerEpoch: 10n, fenced: 1 }),
  ])
  assert.equal(fenced.brokers.get(b(1))?.fenced, true)
})

test('inconsistent records are MetadataErrors', () => {
  assert.throws(() => applyRecords(EMPTY_IMAGE, [partition(1, 0, [1], 1)]), MetadataError)
  assert.throws(() => applyRecords(EMPTY_IMAGE, [topic('a', 1), topic('a', 2)]), MetadataError)
  assert.throws(() => applyRecords(EMPTY_IMAGE, [topic('a', 1), topic('b', 1)]), MetadataError)
})

test('features and producer ids', () => {
  const image = applyRecords(EMPTY_IMAGE, [
    rec(T.FeatureLevel, { name: 'metadata.version', featureLevel: 25 }),
    rec(T.ProducerIds, { brokerId: b(1), brokerEpoch: 1n, nextProducerId: 1000n }),
  ])
  assert.equal(image.features.get('metadata.version'), 25)
  assert.equal(image.nextProducerId, 1000n)
  assert.throws(
    () => applyRecords(image, [rec(T.ProducerIds, { brokerId: b(1), nextProducerId: 10n })]),
    MetadataError,
  )
})

const acl = (n: number, principal = 'User:alice') =>
  rec(T.AccessControlEntry, {
    id: id(n),
    resourceType: 2,
    resourceName: 't',
    patternType: 3,
    principal,
    host: '*',
    operation: 3,
    permissionType: 3,
  })

test('ACLs are added and removed by id; an id twice or an unknown removal is a MetadataError', () => {
  const base = applyRecords(EMPTY_IMAGE, [acl(1)])
  const delta = new MetadataDelta(base)
  delta.replay(acl(2, 'User:bob'))
  delta.replay(rec(T.RemoveAccessControlEntry, { id: id(1) }))
  const { image, changes } = delta.apply()
  assert.deepEqual([...image.acls.keys()], [id(2)])
  assert.equal(image.acls.get(id(2))!.principal, 'User:bob')
  assert.deepEqual(changes.changedAcls, [id(2), id(1)])
  assert.deepEqual([...base.acls.keys()], [id(1)], 'the base image is unchanged')
  assert.throws(() => applyRecords(base, [acl(1)]), MetadataError)
  assert.throws(() => applyRecords(base, [rec(T.RemoveAccessControlEntry, { id: id(9) })]), MetadataError)
})

test('SCRAM credentials are upserted per mechanism and user, removed without a contradiction', () => {
  const cred = (name: string, mechanism: number, iterations: number) =>
    rec(T.UserScramCredential, {
      name,
      mechanism,
      salt: Buffer.from('salt'),
      storedKey: Buffer.from('stored'),
      serverKey: Buffer.from('server'),
      iterations,
    })
  const base = applyRecords(EMPTY_IMAGE, [cred('alice', 2, 4096), cred('bob', 1, 8192)])
  const next = applyRecords(base, [
    cred('alice', 2, 8192),
    rec(T.RemoveUserScramCredential, { name: 'bob', mechanism: 1 }),
    rec(T.RemoveUserScramCredential, { name: 'nobody', mechanism: 1 }),
  ])
  assert.equal(scramCredential(next, 'SCRAM-SHA-512', 'alice')?.iterations, 8192)
  assert.equal(scramCredential(next, 2, 'alice')?.storedKey.toString(), 'stored')
  assert.equal(scramCredential(next, 'SCRAM-SHA-256', 'bob'), undefined)
  assert.equal(scramCredential(next, 'SCRAM-SHA-256', 'alice'), undefined)
  assert.equal(scramCredential(base, 'SCRAM-SHA-512', 'alice')?.iterations, 4096, 'the base is unchanged')
  assert.equal(scramCredential(base, 'SCRAM-SHA-256', 'bob')?.iterations, 8192)
})

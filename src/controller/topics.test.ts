import assert from 'node:assert/strict'
import { test } from 'node:test'
import { SeededRandom } from '../io/index.ts'
import { EMPTY_IMAGE, type MetadataImage } from '../metadata/index.ts'
import type { BrokerId, TopicName, Uuid } from '../model/index.ts'
import { ErrorCode, metadataRecordTypes as T } from '../protocol/index.ts'
import type { DecisionContext, PendingRecord } from './decision.ts'
import { commit } from './testing.ts'
import { createPartitions, createTopics, deleteTopics, topicNameProblem } from './topics.ts'

const name = (s: string) => s as TopicName

function cluster(brokers: number): MetadataImage {
  const records: PendingRecord[] = []
  for (let i = 1; i <= brokers; i++) {
    records.push({
      type: T.RegisterBroker as never,
      version: 0,
      data: {
        brokerId: i as BrokerId,
        brokerEpoch: BigInt(i),
        incarnationId: Buffer.alloc(16, i).toString('base64url') as Uuid,
        fenced: false,
      },
    })
  }
  return commit(EMPTY_IMAGE, records)
}

function ctx(image: MetadataImage): DecisionContext {
  return {
    image,
    random: new SeededRandom(1),
    settings: { defaultNumPartitions: 1, defaultReplicationFactor: 1, deleteTopicEnable: true },
    validateTopicConfigs: (configs) =>
      configs.has('retention.ms') && !/^-?\d+$/.test(configs.get('retention.ms')!)
        ? { key: 'retention.ms', message: 'Invalid value x for configuration retention.ms' }
        : null,
  }
}

const topic = (n: string, numPartitions = -1, replicationFactor = -1, extra = {}) => ({
  name: name(n),
  numPartitions,
  replicationFactor,
  assignments: [],
  configs: [],
  ...extra,
})

test('CreateTopics makes a TopicRecord, its configs and one PartitionRecord per partition', () => {
  const image = cluster(3)
  const d = createTopics(ctx(image), {
    topics: [topic('orders', 6, 3, { configs: [{ name: 'retention.ms', value: '1000' }] })],
    timeoutMs: 1000,
    validateOnly: false,
  })
  assert.deepEqual(
    d.records.map((r) => r.type.name),
    ['TopicRecord', 'ConfigRecord', ...Array(6).fill('PartitionRecord')],
  )
  const result = d.response.topics![0]!
  assert.equal(result.errorCode, ErrorCode.None)
  assert.equal(result.numPartitions, 6)
  const after = commit(image, d.records)
  const t = after.topicsByName.get(name('orders'))!
  assert.equal(t.id, result.topicId)
  assert.equal(t.partitions.size, 6)
  for (const p of t.partitions.values()) {
    assert.equal(p.replicas.length, 3)
    assert.deepEqual(p.isr, p.replicas)
    assert.equal(p.leader, p.replicas[0])
  }
  assert.equal(after.configs.get('2:orders')?.get('retention.ms'), '1000')
})

test('CreateTopics answers each bad topic with Kafka error codes and creates the good ones', () => {
  const image = commit(
    cluster(1),
    createTopics(ctx(cluster(1)), { topics: [topic('a.b')], timeoutMs: 0, validateOnly: false }).records,
  )
  const d = createTopics(ctx(image), {
    topics: [
      topic('dup'),
      topic('dup'),
      topic('bad name!'),
      topic('a.b'),
      topic('a_b'),
      topic('__consumer_offsets'),
      topic('rf', 1, 2),
      topic('zero', 0, 1),
      topic('cfg', 1, 1, { configs: [{ name: 'retention.ms', value: 'x' }] }),
      topic('manual', 3, -1, { assignments: [{ partitionIndex: 0, brokerIds: [1 as BrokerId] }] }),
      topic('ok'),
    ],
    timeoutMs: 0,
    validateOnly: false,
  })
  const codes = Object.fromEntries(d.response.topics!.map((t, i) => [`${i}:${t.name}`, t.errorCode]))
  assert.deepEqual(codes, {
    // A name given twice gets one result, as Kafka's.
    '0:dup': ErrorCode.InvalidRequest,
    '1:bad name!': ErrorCode.InvalidTopicException,
    '2:a.b': ErrorCode.TopicAlreadyExists,
    '3:a_b': ErrorCode.InvalidTopicException,
    '4:__consumer_offsets': ErrorCode.InvalidRequest,
    '5:rf': ErrorCode.InvalidReplicationFactor,
    '6:zero': ErrorCode.InvalidPartitions,
    '7:cfg': ErrorCode.InvalidConfig,
    '8:manual': ErrorCode.InvalidRequest,
    '9:ok': ErrorCode.None,
  })
  assert.deepEqual(
    d.records.map((r) => r.type.name),
    ['TopicRecord', 'PartitionRecord'],
  )
})

test('validateOnly checks everything and writes nothing', () => {
  const d = createTopics(ctx(cluster(1)), { topics: [topic('x', 3, 1)], timeoutMs: 0, validateOnly: true })
  assert.equal(d.records.length, 0)
  assert.equal(d.response.topics![0]!.errorCode, ErrorCode.None)
  assert.equal(d.response.topics![0]!.numPartitions, 3)
})

test('manual assignments are checked', () => {
  const c = ctx(cluster(2))
  const make = (assignments: Array<{ partitionIndex: number; brokerIds: BrokerId[] }>) =>
    createTopics(c, { topics: [topic('m', -1, -1, { assignments })], timeoutMs: 0, validateOnly: false })
      .response.topics![0]!.errorCode
  const b = (...ids: number[]) => ids as BrokerId[]
  assert.equal(
    make([
      { partitionIndex: 0, brokerIds: b(1, 2) },
      { partitionIndex: 1, brokerIds: b(2, 1) },
    ]),
    ErrorCode.None,
  )
  assert.equal(make([{ partitionIndex: 0, brokerIds: b(1, 1) }]), ErrorCode.InvalidReplicaAssignment)
  assert.equal(make([{ partitionIndex: 0, brokerIds: b(1, 9) }]), ErrorCode.InvalidReplicaAssignment)
  assert.equal(make([{ partitionIndex: 1, brokerIds: b(1) }]), ErrorCode.InvalidReplicaAssignment)
  assert.equal(
    make([
      { partitionIndex: 0, brokerIds: b(1) },
      { partitionIndex: 1, brokerIds: b(1, 2) },
    ]),
    ErrorCode.InvalidReplicaAssignment,
  )
})

test('topic names follow Kafka rules', () => {
  assert.equal(topicNameProblem('ok-name_1.x'), null)
  assert.notEqual(topicNameProblem(''), null)
  assert.notEqual(topicNameProblem('..'), null)
  assert.notEqual(topicNameProblem('x'.repeat(250)), null)
  assert.equal(topicNameProblem('x'.repeat(249)), null)
})

test('DeleteTopics by name and by id; unknown ones get their own error', () => {
  let image = cluster(1)
  image = commit(
    image,
    createTopics(ctx(image), { topics: [topic('a'), topic('b')], timeoutMs: 0, validateOnly: false }).records,
  )
  const idB = image.topicsByName.get(name('b'))!.id
  const d = deleteTopics(ctx(image), {
    topicNames: [],
    topics: [
      { name: name('a'), topicId: 'AAAAAAAAAAAAAAAAAAAAAA' as Uuid },
      { name: null, topicId: idB },
      { name: name('nope'), topicId: 'AAAAAAAAAAAAAAAAAAAAAA' as Uuid },
    ],
    timeoutMs: 0,
  })
  assert.deepEqual(
    d.response.responses!.map((r) => [r.name, r.errorCode]),
    [
      ['a', ErrorCode.None],
      ['b', ErrorCode.None],
      ['nope', ErrorCode.UnknownTopicOrPartition],
    ],
  )
  const after = commit(image, d.records)
  assert.equal(after.topicsByName.size, 0)
})

test('DeleteTopics refuses names or ids given twice, both or neither, as Kafka does', () => {
  let image = cluster(1)
  image = commit(
    image,
    createTopics(ctx(image), { topics: [topic('a'), topic('b')], timeoutMs: 0, validateOnly: false }).records,
  )
  const idB = image.topicsByName.get(name('b'))!.id
  const zero = 'AAAAAAAAAAAAAAAAAAAAAA' as Uuid
  const d = deleteTopics(ctx(image), {
    topicNames: [],
    topics: [
      { name: name('a'), topicId: zero },
      { name: name('a'), topicId: zero },
      { name: null, topicId: idB },
      { name: null, topicId: idB },
      { name: name('b'), topicId: idB },
      { name: null, topicId: zero },
    ],
    timeoutMs: 0,
  })
  assert.deepEqual(
    d.response.responses!.map((r) => [r.name, r.errorCode, r.errorMessage]),
    [
      ['b', ErrorCode.InvalidRequest, 'You may not specify both topic name and topic id.'],
      [null, ErrorCode.InvalidRequest, 'Neither topic name nor id were specified.'],
      ['a', ErrorCode.InvalidRequest, 'Duplicate topic name.'],
      [null, ErrorCode.InvalidRequest, 'Duplicate topic id.'],
    ],
  )
  assert.deepEqual(d.records, [])
})

test('CreatePartitions grows a topic and refuses to shrink it', () => {
  let image = cluster(2)
  image = commit(
    image,
    createTopics(ctx(image), { topics: [topic('g', 2, 2)], timeoutMs: 0, validateOnly: false }).records,
  )
  const d = createPartitions(ctx(image), {
    topics: [
      { name: name('g'), count: 5, assignments: null },
      { name: name('missing'), count: 2, assignments: null },
    ],
    timeoutMs: 0,
    validateOnly: false,
  })
  assert.deepEqual(
    d.response.results!.map((r) => r.errorCode),
    [ErrorCode.None, ErrorCode.UnknownTopicOrPartition],
  )
  const after = commit(image, d.records)
  const g = after.topicsByName.get(name('g'))!
  assert.deepEqual([...g.partitions.keys()].sort(), [0, 1, 2, 3, 4])
  assert.equal(g.partitions.get(4)!.replicas.length, 2)
  const shrink = createPartitions(ctx(after), {
    topics: [{ name: name('g'), count: 3, assignments: null }],
    timeoutMs: 0,
    validateOnly: false,
  })
  assert.equal(shrink.response.results![0]!.errorCode, ErrorCode.InvalidPartitions)
})

test('max.broker.partitions: a topic or growth past a broker budget is refused whole, the rest goes on', () => {
  const budget = (image: MetadataImage, max: number): DecisionContext => ({
    ...ctx(image),
    settings: { ...ctx(image).settings, brokerPartitionsMax: max },
  })
  let image = cluster(2)
  // Two brokers of 10 replicas each: 6 partitions at RF 3 cannot be placed (RF > brokers), so RF 2.
  const first = createTopics(budget(image, 10), {
    topics: [topic('a', 6, 2), topic('b', 5, 2), topic('c', 4, 1)],
    timeoutMs: 0,
    validateOnly: false,
  })
  const [a, b, c] = first.response.topics!
  assert.equal(a!.errorCode, ErrorCode.None)
  // a took 6 on each broker: b's 5 more would make 11.
  assert.equal(b!.errorCode, ErrorCode.PolicyViolation)
  assert.match(b!.errorMessage!, /broker \d: it holds 6 of at most 10 \(max\.broker\.partitions\)/)
  assert.equal(c!.errorCode, ErrorCode.None, 'the budget counts what the request placed before it')
  image = commit(image, first.records)
  assert.equal(image.topicsByName.has(name('b')), false)
  // 8 replicas are left in all: growing a by 5 (10 replicas) does not fit, by 2 does.
  const grow = createPartitions(budget(image, 10), {
    topics: [{ name: name('a'), count: 11, assignments: null }],
    timeoutMs: 0,
    validateOnly: false,
  })
  assert.equal(grow.response.results![0]!.errorCode, ErrorCode.PolicyViolation)
  assert.equal(grow.records.length, 0)
  const small = createPartitions(budget(image, 10), {
    topics: [{ name: name('a'), count: 8, assignments: null }],
    timeoutMs: 0,
    validateOnly: false,
  })
  assert.equal(small.response.results![0]!.errorCode, ErrorCode.None)
  // Internal topics count, and are never refused: the brokers need them.
  const internal = createTopics(
    budget(image, 10),
    { topics: [topic('__consumer_offsets', 50, 1)], timeoutMs: 0, validateOnly: false },
    { allowInternal: true },
  )
  assert.equal(internal.response.topics![0]!.errorCode, ErrorCode.None)
  // 0: no bound.
  const unbounded = createTopics(budget(image, 0), {
    topics: [topic('big', 100, 2)],
    timeoutMs: 0,
    validateOnly: false,
  })
  assert.equal(unbounded.response.topics![0]!.errorCode, ErrorCode.None)
})

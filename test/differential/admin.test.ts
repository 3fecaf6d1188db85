/**
 * Differential: metadata, topic and config administration, the same requests to Kafka 4.0 and to
 * Weir, responses compared field by field (harness.ts).
 */
import { after, before } from 'node:test'
import { LOGGER_NAMES } from '../../src/broker/index.ts'
import type { BrokerId, TopicName, Uuid } from '../../src/model/index.ts'
import { apis } from '../../src/protocol/index.ts'
import { Pair, type Side, scenario } from './harness.ts'

let pair: Pair

before(async () => {
  pair = await Pair.start('admin')
})

after(async () => {
  await pair?.stop()
})

const TOPIC = 2
const BROKER = 4
const BROKER_LOGGER = 8
const SET = 0
const DELETE = 1
const APPEND = 2
const SUBTRACT = 3
const topic = (name: string) => name as TopicName
const broker = (id: number) => id as BrokerId

scenario(
  'ApiVersions: the API keys and version ranges',
  () => pair,
  async () => {
    const v = pair.version(apis.ApiVersions)
    await pair.both('api-versions', apis.ApiVersions, v, {
      clientSoftwareName: 'weir-differential',
      clientSoftwareVersion: '1.0',
    })
    // v0 has no client software fields; kafka-python and old clients start there.
    await pair.both('api-versions/v0', apis.ApiVersions, 0, {})
  },
)

scenario(
  'Metadata: all, named, unknown, invalid and auto-created topics, old versions',
  () => pair,
  async () => {
    const v = pair.version(apis.Metadata)
    await pair.both('metadata/all-empty', apis.Metadata, v, { topics: null })
    await pair.both('metadata/unknown', apis.Metadata, v, {
      topics: [{ name: topic('no-such-topic') }],
      allowAutoTopicCreation: false,
    })
    await pair.both('metadata/invalid-name', apis.Metadata, v, {
      topics: [{ name: topic('bad name!') }],
      allowAutoTopicCreation: true,
    })
    await pair.both('metadata/auto-create', apis.Metadata, v, {
      topics: [{ name: topic('auto-created') }],
      allowAutoTopicCreation: true,
    })
    await pair.waitForTopic('auto-created', 2)
    await pair.both('metadata/auto-created', apis.Metadata, v, {
      topics: [{ name: topic('auto-created') }],
      allowAutoTopicCreation: true,
      includeTopicAuthorizedOperations: true,
    })
    await pair.both('metadata/unknown-id', apis.Metadata, v, {
      topics: [{ name: null, topicId: 'AAAAAAAAAAAAAAAAAAAAAQ' as Uuid }],
    })
    await pair.both('metadata/all', apis.Metadata, v, { topics: null })
    // kafka-python asks v0 and v1; v4 brought allowAutoTopicCreation, v9 flexible encoding.
    const old = [0, 1, 4, 9].filter((x) => pair.serves(apis.Metadata, x))
    for (const o of old) {
      await pair.both(`metadata/v${o}-all`, apis.Metadata, o, { topics: o === 0 ? [] : null })
    }
    for (const o of old) {
      // Below v4 a named topic is always auto-created (the request cannot say otherwise).
      await pair.both(`metadata/v${o}-named`, apis.Metadata, o, {
        topics: [{ name: topic('auto-created') }, { name: topic(`no-such-topic-v${o}`) }],
        ...(o >= 4 ? { allowAutoTopicCreation: false } : {}),
      })
    }
    await pair.waitForTopic('no-such-topic-v0', 2)
    await pair.waitForTopic('no-such-topic-v1', 2)
    await pair.both('metadata/v1-auto-created', apis.Metadata, 1, {
      topics: [{ name: topic('no-such-topic-v0') }, { name: topic('no-such-topic-v1') }],
    })
  },
)

scenario(
  'CreateTopics: valid, duplicate, bad name, bad replication factor, bad config, validate-only, assignments',
  () => pair,
  async () => {
    const v = pair.version(apis.CreateTopics)
    const create = (step: string, topics: Parameters<typeof createBody>[0], validateOnly = false) =>
      pair.both(`create-topics/${step}`, apis.CreateTopics, v, createBody(topics, validateOnly))
    await create('valid', [
      {
        name: topic('created'),
        numPartitions: 3,
        replicationFactor: 1,
        configs: [
          { name: 'retention.ms', value: '123456' },
          { name: 'cleanup.policy', value: 'compact' },
        ],
      },
    ])
    await create('defaults', [{ name: topic('defaults'), numPartitions: -1, replicationFactor: -1 }])
    await create('duplicate', [{ name: topic('created'), numPartitions: 1, replicationFactor: 1 }])
    await create('bad-name', [
      { name: topic('bad name!'), numPartitions: 1, replicationFactor: 1 },
      { name: topic('..'), numPartitions: 1, replicationFactor: 1 },
      { name: topic('x'.repeat(250)), numPartitions: 1, replicationFactor: 1 },
      { name: topic(''), numPartitions: 1, replicationFactor: 1 },
    ])
    await create('bad-replication-factor', [
      { name: topic('rf-three'), numPartitions: 1, replicationFactor: 3 },
      { name: topic('rf-zero'), numPartitions: 1, replicationFactor: 0 },
      { name: topic('rf-minus-two'), numPartitions: 1, replicationFactor: -2 },
    ])
    await create('bad-partitions', [
      { name: topic('p-zero'), numPartitions: 0, replicationFactor: 1 },
      { name: topic('p-minus-two'), numPartitions: -2, replicationFactor: 1 },
    ])
    // More records than one atomic controller batch (10,000): the whole request is refused.
    await create('excessive-batch', [
      { name: topic('p-ten-thousand'), numPartitions: 10_000, replicationFactor: 1 },
    ])
    await create('excessive-batch-together', [
      { name: topic('p-six-thousand-a'), numPartitions: 6_000, replicationFactor: 1 },
      { name: topic('p-six-thousand-b'), numPartitions: 6_000, replicationFactor: 1 },
    ])
    await create('bad-config', [
      {
        name: topic('bad-config-value'),
        numPartitions: 1,
        replicationFactor: 1,
        configs: [{ name: 'retention.ms', value: 'soon' }],
      },
      {
        name: topic('bad-config-name'),
        numPartitions: 1,
        replicationFactor: 1,
        configs: [{ name: 'no.such.config', value: '1' }],
      },
      {
        name: topic('bad-config-null'),
        numPartitions: 1,
        replicationFactor: 1,
        configs: [{ name: 'retention.ms', value: null }],
      },
      {
        name: topic('bad-config-below-min'),
        numPartitions: 1,
        replicationFactor: 1,
        configs: [{ name: 'segment.bytes', value: '100' }],
      },
      {
        name: topic('bad-config-negative'),
        numPartitions: 1,
        replicationFactor: 1,
        configs: [{ name: 'retention.ms', value: '-5' }],
      },
      {
        name: topic('bad-config-list'),
        numPartitions: 1,
        replicationFactor: 1,
        configs: [{ name: 'cleanup.policy', value: 'compact,shred' }],
      },
      {
        name: topic('bad-config-broker-key'),
        numPartitions: 1,
        replicationFactor: 1,
        configs: [{ name: 'log.retention.ms', value: '1000' }],
      },
    ])
    await create('odd-configs', [
      {
        name: topic('odd-configs'),
        numPartitions: 1,
        replicationFactor: 1,
        configs: [
          { name: 'min.insync.replicas', value: '3' },
          { name: 'cleanup.policy', value: 'compact,delete' },
          { name: 'compression.type', value: 'zstd' },
          { name: 'message.timestamp.type', value: 'LogAppendTime' },
          { name: 'retention.ms', value: '-1' },
        ],
      },
    ])
    await create(
      'validate-only',
      [
        { name: topic('validated'), numPartitions: 4, replicationFactor: 1 },
        { name: topic('created'), numPartitions: 1, replicationFactor: 1 },
        { name: topic('validated-bad'), numPartitions: 1, replicationFactor: 2 },
      ],
      true,
    )
    await pair.both('create-topics/validate-only-not-created', apis.Metadata, pair.version(apis.Metadata), {
      topics: [{ name: topic('validated') }],
      allowAutoTopicCreation: false,
    })
    await create('assignment', [
      {
        name: topic('assigned'),
        numPartitions: -1,
        replicationFactor: -1,
        assignments: [
          { partitionIndex: 0, brokerIds: [broker(1)] },
          { partitionIndex: 1, brokerIds: [broker(1)] },
        ],
      },
    ])
    await create('bad-assignment', [
      {
        name: topic('assigned-unknown-broker'),
        numPartitions: -1,
        replicationFactor: -1,
        assignments: [{ partitionIndex: 0, brokerIds: [broker(7)] }],
      },
      {
        name: topic('assigned-with-count'),
        numPartitions: 2,
        replicationFactor: -1,
        assignments: [{ partitionIndex: 0, brokerIds: [broker(1)] }],
      },
      {
        name: topic('assigned-gap'),
        numPartitions: -1,
        replicationFactor: -1,
        assignments: [
          { partitionIndex: 0, brokerIds: [broker(1)] },
          { partitionIndex: 2, brokerIds: [broker(1)] },
        ],
      },
      {
        name: topic('assigned-twice'),
        numPartitions: -1,
        replicationFactor: -1,
        assignments: [{ partitionIndex: 0, brokerIds: [broker(1), broker(1)] }],
      },
    ])
    await create('same-name-twice', [
      { name: topic('twice'), numPartitions: 1, replicationFactor: 1 },
      { name: topic('twice'), numPartitions: 1, replicationFactor: 1 },
    ])
    await create('internal', [{ name: topic('__consumer_offsets'), numPartitions: 1, replicationFactor: 1 }])
    for (const t of ['created', 'defaults', 'assigned']) await pair.waitForTopic(t, t === 'created' ? 3 : 2)
    await pair.both('create-topics/metadata', apis.Metadata, pair.version(apis.Metadata), {
      topics: ['created', 'defaults', 'assigned'].map((name) => ({ name: topic(name) })),
      allowAutoTopicCreation: false,
    })
    // v4: the oldest version Kafka 4.0 still serves? Whatever both serve at the bottom.
    await pair.both(
      'create-topics/v2',
      apis.CreateTopics,
      2,
      createBody([{ name: topic('created'), numPartitions: 1, replicationFactor: 1 }], false),
    )
  },
)

function createBody(
  topics: {
    name: TopicName
    numPartitions: number
    replicationFactor: number
    assignments?: { partitionIndex: number; brokerIds: BrokerId[] }[]
    configs?: { name: string; value: string | null }[]
  }[],
  validateOnly: boolean,
) {
  return {
    topics: topics.map((t) => ({ assignments: [], configs: [], ...t })),
    timeoutMs: 30_000,
    validateOnly,
  }
}

scenario(
  'CreatePartitions: grow, shrink, same count, unknown topic, assignments, validate-only',
  () => pair,
  async () => {
    const v = pair.version(apis.CreatePartitions)
    await pair.each(
      apis.CreateTopics,
      pair.version(apis.CreateTopics),
      createBody([{ name: topic('growing'), numPartitions: 1, replicationFactor: 1 }], false),
    )
    await pair.waitForTopic('growing', 1)
    const cp = (
      step: string,
      topics: { name: string; count: number; assignments?: number[][] | null }[],
      validateOnly = false,
    ) =>
      pair.both(`create-partitions/${step}`, apis.CreatePartitions, v, {
        topics: topics.map((t) => ({
          name: topic(t.name),
          count: t.count,
          assignments:
            t.assignments === undefined || t.assignments === null
              ? null
              : t.assignments.map((ids) => ({ brokerIds: ids.map(broker) })),
        })),
        timeoutMs: 30_000,
        validateOnly,
      })
    await cp('validate-only', [{ name: 'growing', count: 4 }], true)
    await cp('grow', [{ name: 'growing', count: 3 }])
    await cp('shrink', [{ name: 'growing', count: 2 }])
    await cp('same', [{ name: 'growing', count: 3 }])
    await cp('unknown', [{ name: 'no-such-topic', count: 3 }])
    await cp('assignment', [{ name: 'growing', count: 4, assignments: [[1]] }])
    await cp('bad-assignment', [{ name: 'growing', count: 6, assignments: [[1]] }])
    await cp('unknown-broker', [{ name: 'growing', count: 5, assignments: [[9]] }])
    await cp('twice', [
      { name: 'growing', count: 5 },
      { name: 'growing', count: 6 },
    ])
    await pair.waitForTopic('growing', 4)
    await pair.both('create-partitions/metadata', apis.Metadata, pair.version(apis.Metadata), {
      topics: [{ name: topic('growing') }],
      allowAutoTopicCreation: false,
    })
  },
)

scenario(
  'DescribeConfigs: a topic with overrides, synonyms, documentation, named keys, broker keys',
  () => pair,
  async () => {
    const v = pair.version(apis.DescribeConfigs)
    await pair.each(
      apis.CreateTopics,
      pair.version(apis.CreateTopics),
      createBody(
        [
          {
            name: topic('configured'),
            numPartitions: 1,
            replicationFactor: 1,
            configs: [
              { name: 'retention.ms', value: '86400000' },
              { name: 'max.message.bytes', value: '65536' },
              { name: 'min.insync.replicas', value: '1' },
            ],
          },
        ],
        false,
      ),
    )
    await pair.waitForTopic('configured', 1)
    const describe = (
      step: string,
      resources: { type: number; name: string; keys?: string[] | null }[],
      o: { synonyms?: boolean; docs?: boolean } = {},
    ) =>
      pair.both(`describe-configs/${step}`, apis.DescribeConfigs, v, {
        resources: resources.map((r) => ({
          resourceType: r.type,
          resourceName: r.name,
          configurationKeys: r.keys ?? null,
        })),
        includeSynonyms: o.synonyms ?? false,
        includeDocumentation: o.docs ?? false,
      })
    await describe('topic', [{ type: TOPIC, name: 'configured' }])
    await describe('topic-synonyms', [{ type: TOPIC, name: 'configured' }], { synonyms: true })
    await describe(
      'topic-documentation',
      [{ type: TOPIC, name: 'configured', keys: ['retention.ms', 'cleanup.policy'] }],
      { docs: true },
    )
    await describe(
      'topic-keys',
      [{ type: TOPIC, name: 'configured', keys: ['retention.ms', 'segment.bytes', 'no.such.config'] }],
      { synonyms: true },
    )
    await describe('unknown-topic', [{ type: TOPIC, name: 'no-such-topic' }])
    await describe('bad-resource', [
      { type: BROKER, name: '7' },
      { type: BROKER, name: 'one' },
    ])
    await describe('unknown-resource-type', [{ type: 99, name: 'x' }])
    await describe(
      'broker-keys',
      [
        {
          type: BROKER,
          name: '1',
          keys: [
            'num.partitions',
            'log.retention.hours',
            'log.retention.ms',
            'message.max.bytes',
            'auto.create.topics.enable',
            'min.insync.replicas',
            'compression.type',
            'log.cleanup.policy',
          ],
        },
      ],
      { synonyms: true },
    )
    await describe(
      'broker-default',
      [{ type: BROKER, name: '', keys: ['log.retention.ms', 'num.partitions'] }],
      { synonyms: true },
    )
    for (const old of [0, 1, 2].filter((x) => pair.serves(apis.DescribeConfigs, x))) {
      await pair.both(`describe-configs/v${old}`, apis.DescribeConfigs, old, {
        resources: [
          {
            resourceType: TOPIC,
            resourceName: 'configured',
            configurationKeys: ['retention.ms', 'cleanup.policy'],
          },
        ],
        includeSynonyms: old >= 1,
      })
    }
  },
)

scenario(
  'BROKER_LOGGER: describe the loggers, set and reset a level, and the refusals',
  () => pair,
  async () => {
    const v = pair.version(apis.IncrementalAlterConfigs)
    const alter = (step: string, configs: { name: string; op: number; value: string | null }[], name = '1') =>
      pair.both(`broker-logger/${step}`, apis.IncrementalAlterConfigs, v, {
        resources: [
          {
            resourceType: BROKER_LOGGER,
            resourceName: name,
            configs: configs.map((c) => ({ name: c.name, configOperation: c.op, value: c.value })),
          },
        ],
        validateOnly: false,
      })
    const describe = (step: string, keys: string[] | null, name = '1') =>
      pair.both(`broker-logger/${step}`, apis.DescribeConfigs, pair.version(apis.DescribeConfigs), {
        resources: [{ resourceType: BROKER_LOGGER, resourceName: name, configurationKeys: keys }],
        includeSynonyms: true,
        includeDocumentation: true,
      })
    // Every logger Weir has is one Kafka has too.
    await describe('describe-known', Object.values(LOGGER_NAMES))
    await alter('set', [{ name: 'kafka.server.ReplicaManager', op: SET, value: 'DEBUG' }])
    await describe('after-set', ['kafka.server.ReplicaManager'])
    await alter('set-lower-case', [{ name: 'kafka.server.ReplicaManager', op: SET, value: 'warn' }])
    await describe('after-lower-case', ['kafka.server.ReplicaManager'])
    await alter('delete', [{ name: 'kafka.server.ReplicaManager', op: DELETE, value: null }])
    await describe('after-delete', ['kafka.server.ReplicaManager'])
    await alter('bad-level', [{ name: 'kafka.server.ReplicaManager', op: SET, value: 'LOUD' }])
    await alter('unknown-logger', [{ name: 'no.such.logger', op: SET, value: 'DEBUG' }])
    await alter('delete-unknown', [{ name: 'no.such.logger', op: DELETE, value: null }])
    await alter('delete-root', [{ name: 'root', op: DELETE, value: null }])
    await alter('append', [{ name: 'kafka', op: APPEND, value: 'DEBUG' }])
    await alter('subtract', [{ name: 'kafka', op: SUBTRACT, value: 'DEBUG' }])
    await alter('other-node', [{ name: 'kafka', op: SET, value: 'DEBUG' }], '2')
    await alter('not-a-number', [{ name: 'kafka', op: SET, value: 'DEBUG' }], 'x')
    await describe('describe-other-node', null, '2')
    await pair.both('broker-logger/alter-configs', apis.AlterConfigs, pair.version(apis.AlterConfigs), {
      resources: [
        { resourceType: BROKER_LOGGER, resourceName: '1', configs: [{ name: 'kafka', value: 'DEBUG' }] },
      ],
      validateOnly: false,
    })
  },
)

scenario(
  'IncrementalAlterConfigs and AlterConfigs: set, delete, append, subtract, bad values',
  () => pair,
  async () => {
    const v = pair.version(apis.IncrementalAlterConfigs)
    await pair.each(
      apis.CreateTopics,
      pair.version(apis.CreateTopics),
      createBody(
        [
          {
            name: topic('altered'),
            numPartitions: 1,
            replicationFactor: 1,
            configs: [{ name: 'segment.ms', value: '3600000' }],
          },
        ],
        false,
      ),
    )
    await pair.waitForTopic('altered', 1)
    const alter = (
      step: string,
      configs: { name: string; op: number; value: string | null }[],
      o: { validateOnly?: boolean; resource?: [number, string] } = {},
    ) =>
      pair.both(`incremental-alter-configs/${step}`, apis.IncrementalAlterConfigs, v, {
        resources: [
          {
            resourceType: o.resource?.[0] ?? TOPIC,
            resourceName: o.resource?.[1] ?? 'altered',
            configs: configs.map((c) => ({ name: c.name, configOperation: c.op, value: c.value })),
          },
        ],
        validateOnly: o.validateOnly ?? false,
      })
    // Each side's broker applies a committed change a moment after its controller answered.
    type Described = {
      results: { configs: { name: string; value: string | null; synonyms: { name: string }[] }[] }[]
    }
    const describe = (
      step: string,
      expect: Record<string, string>,
      also: (res: Described) => boolean = () => true,
    ) =>
      pair.both(
        `incremental-alter-configs/${step}`,
        apis.DescribeConfigs,
        pair.version(apis.DescribeConfigs),
        {
          resources: [
            {
              resourceType: TOPIC,
              resourceName: 'altered',
              configurationKeys: ['retention.ms', 'segment.ms', 'cleanup.policy', 'retention.bytes'],
            },
          ],
          includeSynonyms: true,
        },
        {
          until: (res) =>
            Object.entries(expect).every(
              ([k, val]) => res.results[0]?.configs.find((c) => c.name === k)?.value === val,
            ) && also(res),
        },
      )
    await alter('set', [
      { name: 'retention.ms', op: SET, value: '7200000' },
      { name: 'retention.bytes', op: SET, value: '1048576' },
    ])
    await describe('after-set', { 'retention.ms': '7200000', 'retention.bytes': '1048576' })
    await alter('delete', [{ name: 'segment.ms', op: DELETE, value: null }])
    await alter('append', [{ name: 'cleanup.policy', op: APPEND, value: 'compact' }])
    await describe('after-append', { 'cleanup.policy': 'delete,compact', 'segment.ms': '604800000' })
    await alter('subtract', [{ name: 'cleanup.policy', op: SUBTRACT, value: 'delete' }])
    await describe('after-subtract', { 'cleanup.policy': 'compact' })
    await alter('bad-value', [{ name: 'retention.ms', op: SET, value: 'forever' }])
    await alter('bad-number', [{ name: 'retention.bytes', op: SET, value: '1.5' }])
    await alter('bad-enum', [{ name: 'cleanup.policy', op: SET, value: 'shred' }])
    await alter('unknown-name', [{ name: 'no.such.config', op: SET, value: '1' }])
    await alter('append-scalar', [{ name: 'retention.ms', op: APPEND, value: '1' }])
    // An unknown operation (9) is left out: Kafka 4.0's controller fails on it with a NullPointerException
    // and renounces its leadership for a while (Weir answers INVALID_REQUEST).
    await alter('twice', [
      { name: 'retention.ms', op: SET, value: '1000' },
      { name: 'retention.ms', op: SET, value: '2000' },
    ])
    await alter('validate-only', [{ name: 'retention.ms', op: SET, value: '5000' }], { validateOnly: true })
    await alter('unknown-topic', [{ name: 'retention.ms', op: SET, value: '5000' }], {
      resource: [TOPIC, 'no-such-topic'],
    })
    await alter('broker-default', [{ name: 'log.retention.ms', op: SET, value: '604800000' }], {
      resource: [BROKER, ''],
    })
    await alter('broker-read-only', [{ name: 'node.id', op: SET, value: '5' }], { resource: [BROKER, '1'] })
    // The cluster-wide default reaches each side's broker a moment later too: wait for its synonym.
    await describe('after-all', { 'cleanup.policy': 'compact' }, (res) =>
      Boolean(
        res.results[0]?.configs
          .find((c) => c.name === 'retention.ms')
          ?.synonyms.some((s) => s.name === 'log.retention.ms'),
      ),
    )
    await pair.both('alter-configs/set', apis.AlterConfigs, pair.version(apis.AlterConfigs), {
      resources: [
        { resourceType: TOPIC, resourceName: 'altered', configs: [{ name: 'retention.ms', value: '9000' }] },
      ],
      validateOnly: false,
    })
    await pair.both('alter-configs/bad', apis.AlterConfigs, pair.version(apis.AlterConfigs), {
      resources: [
        { resourceType: TOPIC, resourceName: 'altered', configs: [{ name: 'retention.ms', value: 'x' }] },
      ],
      validateOnly: false,
    })
    await describe('after-alter', { 'retention.ms': '9000' })
  },
)

scenario(
  'DeleteTopics: by name, unknown, by id, twice',
  () => pair,
  async () => {
    const v = pair.version(apis.DeleteTopics)
    const c = pair.version(apis.CreateTopics)
    await pair.each(
      apis.CreateTopics,
      c,
      createBody(
        [
          { name: topic('doomed'), numPartitions: 1, replicationFactor: 1 },
          { name: topic('doomed-by-id'), numPartitions: 1, replicationFactor: 1 },
        ],
        false,
      ),
    )
    await pair.waitForTopic('doomed', 1)
    await pair.waitForTopic('doomed-by-id', 1)
    const ids = await pair.each(apis.Metadata, pair.version(apis.Metadata), {
      topics: [{ name: topic('doomed-by-id') }],
      allowAutoTopicCreation: false,
    })
    const idOf = (side: Side) => ids[side].topics[0]!.topicId
    await pair.both('delete-topics/by-name', apis.DeleteTopics, v, {
      topics: [{ name: topic('doomed') }, { name: topic('no-such-topic') }],
      timeoutMs: 30_000,
    })
    await pair.both('delete-topics/by-id', apis.DeleteTopics, v, (side) => ({
      topics: [
        { name: null, topicId: idOf(side) },
        { name: null, topicId: 'AAAAAAAAAAAAAAAAAAAAAQ' as Uuid },
      ],
      timeoutMs: 30_000,
    }))
    await pair.both('delete-topics/same-name-twice', apis.DeleteTopics, v, {
      topics: [{ name: topic('no-such-topic') }, { name: topic('no-such-topic') }],
      timeoutMs: 30_000,
    })
    await pair.both('delete-topics/name-and-id', apis.DeleteTopics, v, (side) => ({
      topics: [{ name: topic('created'), topicId: idOf(side) }],
      timeoutMs: 30_000,
    }))
    await pair.both('delete-topics/neither', apis.DeleteTopics, v, {
      topics: [{ name: null, topicId: 'AAAAAAAAAAAAAAAAAAAAAA' as Uuid }],
      timeoutMs: 30_000,
    })
    await pair.both('delete-topics/same-id-twice', apis.DeleteTopics, v, {
      topics: [
        { name: null, topicId: 'AAAAAAAAAAAAAAAAAAAAAg' as Uuid },
        { name: null, topicId: 'AAAAAAAAAAAAAAAAAAAAAg' as Uuid },
      ],
      timeoutMs: 30_000,
    })
    await pair.waitForTopicGone('doomed')
    await pair.waitForTopicGone('doomed-by-id')
    await pair.both('delete-topics/again', apis.DeleteTopics, v, {
      topics: [{ name: topic('doomed') }],
      timeoutMs: 30_000,
    })
    await pair.both('delete-topics/v1', apis.DeleteTopics, 1, {
      topicNames: [topic('no-such-topic')],
      timeoutMs: 30_000,
    })
  },
)

scenario(
  'DescribeCluster',
  () => pair,
  async () => {
    const v = pair.version(apis.DescribeCluster)
    await pair.both('describe-cluster', apis.DescribeCluster, v, {
      includeClusterAuthorizedOperations: false,
    })
    await pair.both('describe-cluster/authorized-operations', apis.DescribeCluster, v, {
      includeClusterAuthorizedOperations: true,
    })
  },
)

scenario(
  'DescribeQuorum: the metadata quorum of one voter',
  () => pair,
  async () => {
    const v = pair.version(apis.DescribeQuorum)
    const body = (name: string, partition = 0) => ({
      topics: [{ topicName: topic(name), partitions: [{ partitionIndex: partition }] }],
    })
    // Offsets and times are each log's own history.
    const history = [
      '*.highWatermark',
      '*.logEndOffset',
      '*.lastFetchTimestamp',
      '*.lastCaughtUpTimestamp',
      '*.leaderEpoch',
    ]
    await pair.both('describe-quorum', apis.DescribeQuorum, v, body('__cluster_metadata'), {
      ignore: history,
    })
    await pair.both('describe-quorum/unknown-topic', apis.DescribeQuorum, v, body('no-such-topic'))
    await pair.both(
      'describe-quorum/unknown-partition',
      apis.DescribeQuorum,
      v,
      body('__cluster_metadata', 3),
    )
  },
)

scenario(
  'Metadata by topic id, with authorized operations',
  () => pair,
  async () => {
    const v = pair.version(apis.Metadata)
    const named = await pair.each(apis.Metadata, v, {
      topics: [{ name: topic('created') }],
      allowAutoTopicCreation: false,
    })
    await pair.both('metadata/by-id', apis.Metadata, v, (side) => ({
      topics: [{ name: null, topicId: named[side].topics[0]!.topicId }],
      allowAutoTopicCreation: false,
      includeTopicAuthorizedOperations: true,
    }))
    for (const o of [8, 10].filter((x) => pair.serves(apis.Metadata, x)))
      await pair.both(`metadata/v${o}-cluster-operations`, apis.Metadata, o, {
        topics: [{ name: topic('created') }],
        allowAutoTopicCreation: false,
        includeClusterAuthorizedOperations: true,
        includeTopicAuthorizedOperations: true,
      })
  },
)

scenario(
  'ACL APIs without an authorizer: SECURITY_DISABLED; SCRAM credentials work without one',
  () => pair,
  async () => {
    const anyFilter = {
      resourceTypeFilter: 1,
      resourceNameFilter: null,
      patternTypeFilter: 1,
      principalFilter: null,
      hostFilter: null,
      operation: 1,
      permissionType: 1,
    }
    await pair.both('create-acls/no-authorizer', apis.CreateAcls, pair.version(apis.CreateAcls), {
      creations: [
        {
          resourceType: 2,
          resourceName: 't',
          resourcePatternType: 3,
          principal: 'User:alice',
          host: '*',
          operation: 3,
          permissionType: 3,
        },
      ],
    })
    await pair.both(
      'describe-acls/no-authorizer',
      apis.DescribeAcls,
      pair.version(apis.DescribeAcls),
      anyFilter,
    )
    await pair.both('delete-acls/no-authorizer', apis.DeleteAcls, pair.version(apis.DeleteAcls), {
      filters: [anyFilter],
    })
    await pair.both(
      'describe-scram/no-authorizer',
      apis.DescribeUserScramCredentials,
      pair.version(apis.DescribeUserScramCredentials),
      { users: [{ name: 'nobody' }] },
    )
  },
)

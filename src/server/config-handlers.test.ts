// DescribeConfigs, AlterConfigs and IncrementalAlterConfigs through Dispatcher.dispatch(frame): the
// handlers with the controller's pure decisions behind an in-memory stand-in for the quorum.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { ConfigSource, ConfigTypeCode } from '../config/index.ts'
import { AlterConfigOp, alterConfigs, incrementalAlterConfigs } from '../controller/index.ts'
import { applyRecords, ConfigResourceType, EMPTY_IMAGE, type MetadataImage } from '../metadata/index.ts'
import type { BrokerId, TopicName, Uuid } from '../model/index.ts'
import {
  type Api,
  apis,
  decodeMetadataRecord,
  decodeResponse,
  ErrorCode,
  encodeMetadataRecord,
  encodeRequest,
  metadataRecordTypes as T,
} from '../protocol/index.ts'
import { Dispatcher } from './dispatcher.ts'
import { makeAlterConfigsHandler } from './handlers/alter-configs.ts'
import type { ControllerApi } from './handlers/controller-api.ts'
import { makeDescribeConfigsHandler } from './handlers/describe-configs.ts'
import { makeIncrementalAlterConfigsHandler } from './handlers/incremental-alter-configs.ts'
import { HandlerRegistry } from './registry.ts'

const TOPIC = ConfigResourceType.Topic
const BROKER = ConfigResourceType.Broker
const CONN = { connectionId: 1, clientAddress: 'inject', listenerName: 'PLAINTEXT' }
const STATIC = new Map([
  ['node.id', '1'],
  ['log.retention.minutes', '2000'],
])

function record(type: unknown, data: unknown) {
  return decodeMetadataRecord(encodeMetadataRecord(type as never, 0, data as never))
}

/** The controller's decisions on an image held in memory: every decision commits at once. */
class MemoryController implements ControllerApi {
  image: MetadataImage
  /** When set, every call fails with it (a controller that cannot be reached). */
  failure: Error | null = null

  constructor() {
    this.image = applyRecords(EMPTY_IMAGE, [
      record(T.RegisterBroker, {
        brokerId: 1 as BrokerId,
        brokerEpoch: 1n,
        incarnationId: Buffer.alloc(16, 1).toString('base64url') as Uuid,
        fenced: false,
      }),
      record(T.Topic, { name: 't' as TopicName, topicId: Buffer.alloc(16, 2).toString('base64url') as Uuid }),
    ])
  }

  #commit<R>(d: { records: readonly { type: unknown; data: unknown }[]; response: R }): R {
    if (this.failure !== null) throw this.failure
    this.image = applyRecords(
      this.image,
      d.records.map((r) => record(r.type, r.data)),
    )
    return d.response
  }

  async alterConfigs(req: Parameters<ControllerApi['alterConfigs']>[0]) {
    return this.#commit(alterConfigs(this.image, req, { nodeId: 1, staticBroker: STATIC }))
  }

  async incrementalAlterConfigs(req: Parameters<ControllerApi['incrementalAlterConfigs']>[0]) {
    return this.#commit(incrementalAlterConfigs(this.image, req, { nodeId: 1, staticBroker: STATIC }))
  }

  createTopics(): never {
    throw new Error('not in these tests')
  }
  deleteTopics(): never {
    throw new Error('not in these tests')
  }
  electLeaders(): never {
    throw new Error('not in these tests')
  }
  createPartitions(): never {
    throw new Error('not in these tests')
  }
}

function node(brokerListener = true) {
  const controller = new MemoryController()
  const registry = new HandlerRegistry()
  const failureOf = (e: unknown) => ({ errorCode: ErrorCode.NotController, message: (e as Error).message })
  registry.register(
    makeDescribeConfigsHandler({ nodeId: 1, staticConfig: STATIC, image: () => controller.image }),
    makeAlterConfigsHandler(controller, failureOf, { nodeId: 1, brokerListener }),
    makeIncrementalAlterConfigsHandler(controller, failureOf, { nodeId: 1, brokerListener }),
  )
  const dispatcher = new Dispatcher(registry)
  let correlationId = 0
  async function call<ReqIn, Res>(
    api: Api<unknown, ReqIn, Res, never>,
    version: number,
    body: ReqIn,
  ): Promise<Res> {
    correlationId++
    const frame = Buffer.concat(
      encodeRequest(
        api as never,
        { requestApiVersion: version, correlationId, clientId: 't' },
        body as never,
      ),
    )
    const r = await dispatcher.dispatch(frame.subarray(4), CONN)
    assert.equal(r.kind, 'response')
    if (r.kind !== 'response') throw new Error('no response')
    const decoded = decodeResponse(api as never, version, Buffer.concat(r.frame).subarray(4))
    assert.equal(decoded.correlationId, correlationId)
    return decoded.body as Res
  }
  return { controller, call }
}

const describeReq = (
  resources: Array<[type: number, name: string, keys?: string[] | null]>,
  flags: { includeSynonyms?: boolean; includeDocumentation?: boolean } = {},
) => ({
  resources: resources.map(([resourceType, resourceName, keys]) => ({
    resourceType,
    resourceName,
    configurationKeys: keys ?? null,
  })),
  includeSynonyms: flags.includeSynonyms ?? false,
  includeDocumentation: flags.includeDocumentation ?? false,
})

describe('DescribeConfigs', () => {
  test('v4: a topic override shows as DYNAMIC_TOPIC_CONFIG with its synonyms; keys in catalog order', async () => {
    const { controller, call } = node()
    await controller.incrementalAlterConfigs({
      resources: [
        {
          resourceType: TOPIC,
          resourceName: 't',
          configs: [{ name: 'retention.ms', configOperation: AlterConfigOp.Set, value: '1000' }],
        },
      ],
      validateOnly: false,
    })
    const res = await call(
      apis.DescribeConfigs,
      4,
      describeReq([[TOPIC, 't', ['segment.bytes', 'retention.ms', 'no.such.key']]], {
        includeSynonyms: true,
      }),
    )
    const result = res.results[0]!
    assert.deepEqual([result.errorCode, result.errorMessage], [ErrorCode.None, ''])
    assert.deepEqual(
      result.configs.map((c) => c.name),
      ['segment.bytes', 'retention.ms'],
    )
    const retention = result.configs[1]!
    assert.equal(retention.value, '1000')
    assert.equal(retention.configSource, ConfigSource.DynamicTopicConfig)
    assert.equal(retention.configType, ConfigTypeCode.long)
    assert.equal(retention.documentation, null)
    // Kafka's ConfigHelper drops the broker synonyms listed before log.retention.ms itself, and
    // only log.retention.minutes (static) and .hours (default) are set: the topic's own remains.
    assert.deepEqual(
      retention.synonyms.map((s) => [s.name, s.value, s.source]),
      [['retention.ms', '1000', ConfigSource.DynamicTopicConfig]],
    )
  })

  test('an empty key list means every key, as null does; documentation only when asked (v3+)', async () => {
    const { call } = node()
    const all = await call(
      apis.DescribeConfigs,
      3,
      describeReq([[TOPIC, 't', []]], { includeDocumentation: true }),
    )
    const configs = all.results[0]!.configs
    assert.ok(configs.length >= 33, `${configs.length}`)
    assert.ok(configs.every((c) => typeof c.documentation === 'string' && c.documentation.length > 0))
    const retention = configs.find((c) => c.name === 'retention.ms')!
    // log.retention.minutes=2000 in server.properties: the value follows, Kafka's synonym quirk keeps DEFAULT_CONFIG.
    assert.equal(retention.value, '120000000')
    const bare = await call(apis.DescribeConfigs, 4, describeReq([[TOPIC, 't']]))
    assert.ok(bare.results[0]!.configs.every((c) => c.documentation === null && c.synonyms.length === 0))
  })

  test('unknown and illegal topics, other brokers and bad names answer as Kafka', async () => {
    const { call } = node()
    const res = await call(
      apis.DescribeConfigs,
      4,
      describeReq([
        [TOPIC, 'nope'],
        [TOPIC, 'a b'],
        [BROKER, '2'],
        [BROKER, 'x'],
        [ConfigResourceType.BrokerLogger, ''],
        [ConfigResourceType.BrokerLogger, '2'],
        [ConfigResourceType.BrokerLogger, '1'],
        [ConfigResourceType.Group, 'g'],
      ]),
    )
    assert.deepEqual(
      res.results.map((r) => [r.resourceType, r.resourceName, r.errorCode, r.errorMessage, r.configs.length]),
      [
        [TOPIC, 'nope', ErrorCode.UnknownTopicOrPartition, '', 0],
        [
          TOPIC,
          'a b',
          ErrorCode.InvalidTopicException,
          `Topic name "a b" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'`,
          0,
        ],
        [
          BROKER,
          '2',
          ErrorCode.InvalidRequest,
          'Unexpected broker id, expected 1 or empty string, but received 2',
          0,
        ],
        [BROKER, 'x', ErrorCode.InvalidRequest, 'Broker id must be an integer, but it is: x', 0],
        [ConfigResourceType.BrokerLogger, '', ErrorCode.InvalidRequest, 'Broker id must not be empty', 0],
        [
          ConfigResourceType.BrokerLogger,
          '2',
          ErrorCode.InvalidRequest,
          'Unexpected broker id, expected 1 but received 2',
          0,
        ],
        [
          ConfigResourceType.BrokerLogger,
          '1',
          ErrorCode.InvalidRequest,
          'This node has no loggers to describe',
          0,
        ],
        [ConfigResourceType.Group, 'g', ErrorCode.InvalidRequest, 'Unsupported resource type: GROUP', 0],
      ],
    )
  })

  test('the broker resource shows static, dynamic and default layers; the default resource only its own', async () => {
    const { controller, call } = node()
    await controller.incrementalAlterConfigs({
      resources: [
        {
          resourceType: BROKER,
          resourceName: '',
          configs: [{ name: 'log.segment.bytes', configOperation: AlterConfigOp.Set, value: '2097152' }],
        },
        {
          resourceType: BROKER,
          resourceName: '1',
          configs: [{ name: 'log.retention.ms', configOperation: AlterConfigOp.Set, value: '5000' }],
        },
      ],
      validateOnly: false,
    })
    const res = await call(
      apis.DescribeConfigs,
      4,
      describeReq(
        [
          [BROKER, '1', ['log.segment.bytes', 'log.retention.ms', 'log.retention.minutes', 'node.id']],
          [BROKER, ''],
        ],
        { includeSynonyms: true },
      ),
    )
    const broker = new Map(
      res.results[0]!.configs.map((c) => [c.name, [c.value, c.configSource, c.readOnly]]),
    )
    assert.deepEqual(
      broker,
      new Map([
        ['node.id', ['1', ConfigSource.StaticBrokerConfig, true]],
        ['log.segment.bytes', ['2097152', ConfigSource.DynamicDefaultBrokerConfig, false]],
        ['log.retention.ms', ['5000', ConfigSource.DynamicBrokerConfig, false]],
        ['log.retention.minutes', ['2000', ConfigSource.StaticBrokerConfig, true]],
      ]),
    )
    assert.deepEqual(
      res.results[1]!.configs.map((c) => [c.name, c.value, c.configSource]),
      [['log.segment.bytes', '2097152', ConfigSource.DynamicDefaultBrokerConfig]],
    )
  })
})

describe('IncrementalAlterConfigs', () => {
  test('v1: SET then DELETE, read back through DescribeConfigs', async () => {
    const { call } = node()
    const set = await call(apis.IncrementalAlterConfigs, 1, {
      resources: [
        {
          resourceType: TOPIC,
          resourceName: 't',
          configs: [{ name: 'retention.ms', configOperation: AlterConfigOp.Set, value: '1000' }],
        },
      ],
      validateOnly: false,
    })
    assert.deepEqual(set.responses, [
      { errorCode: 0, errorMessage: null, resourceType: TOPIC, resourceName: 't' },
    ])
    const read = async () =>
      (await call(apis.DescribeConfigs, 4, describeReq([[TOPIC, 't', ['retention.ms']]]))).results[0]!
        .configs[0]!
    assert.equal((await read()).configSource, ConfigSource.DynamicTopicConfig)
    const deleted = await call(apis.IncrementalAlterConfigs, 0, {
      resources: [
        {
          resourceType: TOPIC,
          resourceName: 't',
          configs: [{ name: 'retention.ms', configOperation: AlterConfigOp.Delete, value: null }],
        },
      ],
      validateOnly: false,
    })
    assert.equal(deleted.responses[0]!.errorCode, ErrorCode.None)
    const after = await read()
    assert.deepEqual([after.value, after.configSource], ['120000000', ConfigSource.DefaultConfig])
  })

  test('a bad value is INVALID_CONFIG and changes nothing; validateOnly changes nothing either', async () => {
    const { controller, call } = node()
    const before = controller.image
    const res = await call(apis.IncrementalAlterConfigs, 1, {
      resources: [
        {
          resourceType: TOPIC,
          resourceName: 't',
          configs: [{ name: 'retention.ms', configOperation: AlterConfigOp.Set, value: 'abc' }],
        },
      ],
      validateOnly: false,
    })
    assert.deepEqual(
      [res.responses[0]!.errorCode, res.responses[0]!.errorMessage],
      [
        ErrorCode.InvalidConfig,
        'Invalid value abc for configuration retention.ms: Not a number of type LONG',
      ],
    )
    const dry = await call(apis.IncrementalAlterConfigs, 1, {
      resources: [
        {
          resourceType: TOPIC,
          resourceName: 't',
          configs: [{ name: 'retention.ms', configOperation: AlterConfigOp.Set, value: '5' }],
        },
      ],
      validateOnly: true,
    })
    assert.equal(dry.responses[0]!.errorCode, ErrorCode.None)
    assert.equal(controller.image.configs.size, before.configs.size)
  })

  test('the forwarding broker: duplicate resources, other node ids and loggers answered in request order', async () => {
    const { call } = node()
    const op = (name: string, value: string) => ({ name, configOperation: AlterConfigOp.Set, value })
    const res = await call(apis.IncrementalAlterConfigs, 1, {
      resources: [
        { resourceType: TOPIC, resourceName: 'd', configs: [op('retention.ms', '1')] },
        { resourceType: BROKER, resourceName: '2', configs: [op('log.retention.ms', '1')] },
        { resourceType: TOPIC, resourceName: 't', configs: [op('retention.ms', '1')] },
        { resourceType: TOPIC, resourceName: 'd', configs: [op('retention.ms', '2')] },
        { resourceType: ConfigResourceType.BrokerLogger, resourceName: '1', configs: [op('root', 'INFO')] },
        { resourceType: BROKER, resourceName: 'x', configs: [op('log.retention.ms', '1')] },
      ],
      validateOnly: false,
    })
    assert.deepEqual(
      res.responses.map((r) => [r.resourceName, r.errorCode, r.errorMessage]),
      [
        ['d', ErrorCode.InvalidRequest, 'Each resource must appear at most once.'],
        ['2', ErrorCode.InvalidRequest, 'Unexpected broker id, expected 1, but received 2'],
        ['t', ErrorCode.None, null],
        ['d', ErrorCode.InvalidRequest, 'Each resource must appear at most once.'],
        ['1', ErrorCode.InvalidRequest, 'This node has no loggers to change'],
        ['x', ErrorCode.InvalidRequest, 'Node id must be an integer, but it is: x'],
      ],
    )
  })

  test('a controller listener takes any broker id; the controller says whether it exists', async () => {
    const { call } = node(false)
    const res = await call(apis.IncrementalAlterConfigs, 1, {
      resources: [
        {
          resourceType: BROKER,
          resourceName: '2',
          configs: [{ name: 'log.retention.ms', configOperation: AlterConfigOp.Set, value: '1' }],
        },
      ],
      validateOnly: false,
    })
    assert.deepEqual(
      [res.responses[0]!.errorCode, res.responses[0]!.errorMessage],
      [ErrorCode.BrokerIdNotRegistered, 'No node with id 2 found.'],
    )
  })

  test('an unreachable controller fails what was forwarded; what the broker answered itself stays', async () => {
    const { controller, call } = node()
    controller.failure = new Error('no controller')
    const res = await call(apis.IncrementalAlterConfigs, 1, {
      resources: [
        {
          resourceType: TOPIC,
          resourceName: 't',
          configs: [{ name: 'retention.ms', configOperation: AlterConfigOp.Set, value: '1' }],
        },
        {
          resourceType: BROKER,
          resourceName: '3',
          configs: [{ name: 'log.retention.ms', configOperation: AlterConfigOp.Set, value: '1' }],
        },
      ],
      validateOnly: false,
    })
    assert.deepEqual(
      res.responses.map((r) => r.errorCode),
      [ErrorCode.NotController, ErrorCode.InvalidRequest],
    )
  })
})

describe('AlterConfigs', () => {
  for (const version of [0, 2]) {
    test(`v${version}: replaces the topic's set; null values and loggers are refused`, async () => {
      const { controller, call } = node()
      const first = await call(apis.AlterConfigs, version, {
        resources: [
          {
            resourceType: TOPIC,
            resourceName: 't',
            configs: [
              { name: 'retention.ms', value: '1000' },
              { name: 'segment.bytes', value: '1048576' },
            ],
          },
        ],
        validateOnly: false,
      })
      assert.equal(first.responses[0]!.errorCode, ErrorCode.None)
      const second = await call(apis.AlterConfigs, version, {
        resources: [
          { resourceType: TOPIC, resourceName: 't', configs: [{ name: 'cleanup.policy', value: 'compact' }] },
          { resourceType: TOPIC, resourceName: 'nope', configs: [{ name: 'retention.ms', value: null }] },
          { resourceType: ConfigResourceType.BrokerLogger, resourceName: '1', configs: [] },
        ],
        validateOnly: false,
      })
      assert.deepEqual(
        second.responses.map((r) => [r.errorCode, r.errorMessage]),
        [
          [ErrorCode.None, null],
          [ErrorCode.InvalidRequest, 'Null value not supported for : retention.ms'],
          [ErrorCode.InvalidRequest, 'Unknown resource type 8'],
        ],
      )
      assert.deepEqual(
        [...(controller.image.configs.get(`${TOPIC}:t`) ?? [])],
        [['cleanup.policy', 'compact']],
      )
    })
  }
})

import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { brokerConfigDef } from './broker-configs.ts'
import { ConfigSource, ConfigTypeCode, parseConfigValue } from './definition.ts'
import { parseProperties } from './properties.ts'
import {
  type DescribeConfigsEntry,
  describeBrokerConfigs,
  describeDefaultBrokerConfigs,
  describeTopicConfigs,
  resolveBrokerConfig,
  resolveTopicConfig,
  type TopicConfigLayers,
  validateBrokerConfigs,
  validateTopicConfigs,
} from './resolve.ts'
import { TOPIC_CONFIGS } from './topic-configs.ts'

const fixture = (name: string) =>
  JSON.parse(readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8'))

const map = (o: Record<string, string>) => new Map(Object.entries(o))

// ---------------------------------------------------------------------------------------------
// DescribeConfigs against Kafka 4.0
// ---------------------------------------------------------------------------------------------

interface KafkaEntry {
  name: string
  value: string | null
  source: string
  readOnly: boolean
  sensitive: boolean
  type: string
  synonyms: { name: string; value: string | null; source: string }[]
  documentation: string | null
}

const SOURCE_NAMES: Record<number, string> = {
  1: 'DYNAMIC_TOPIC_CONFIG',
  2: 'DYNAMIC_BROKER_CONFIG',
  3: 'DYNAMIC_DEFAULT_BROKER_CONFIG',
  4: 'STATIC_BROKER_CONFIG',
  5: 'DEFAULT_CONFIG',
}

/** Our entry in the shape of the Java Admin client's ConfigEntry, as the fixture holds it. */
function asKafka(e: DescribeConfigsEntry): KafkaEntry {
  const type = Object.entries(ConfigTypeCode).find(([, code]) => code === e.configType)?.[0] ?? '?'
  return {
    name: e.name,
    value: e.value,
    source: SOURCE_NAMES[e.configSource] ?? '?',
    readOnly: e.readOnly,
    sensitive: e.isSensitive,
    type: type.toUpperCase(),
    synonyms: e.synonyms.map((s) => ({
      name: s.name,
      value: s.value,
      source: SOURCE_NAMES[s.source] ?? '?',
    })),
    documentation: e.documentation,
  }
}

const describeFixture = fixture('kafka-4.0.0-describe-configs.json')
const capturedLayers = {
  staticBroker: parseProperties(describeFixture.serverProperties),
  dynamicDefault: map(describeFixture.dynamicDefault),
  dynamicBroker: map(describeFixture.dynamicBroker),
}

describe('describeTopicConfigs against Kafka 4.0', () => {
  for (const topic of ['t-default', 't-one', 't-two']) {
    it(`gives Kafka's entries for ${topic} (overrides ${JSON.stringify(describeFixture.topics[topic])})`, () => {
      const kafka: KafkaEntry[] = describeFixture.results[`TOPIC:${topic}`]
      const withDocs = kafka.some((e) => e.documentation !== null)
      const ours = describeTopicConfigs(
        { ...capturedLayers, topic: map(describeFixture.topics[topic]) },
        { includeSynonyms: true, includeDocumentation: withDocs },
      )
      const kafkaNames = new Set(kafka.map((e) => e.name))
      assert.deepEqual(
        ours.filter((e) => !kafkaNames.has(e.name)).map((e) => e.name),
        ['flush.on.ack'],
      )
      const byName = new Map(ours.map((e) => [e.name, asKafka(e)]))
      for (const e of kafka) assert.deepEqual(byName.get(e.name), e, e.name)
    })
  }
})

describe('describeBrokerConfigs against Kafka 4.0', () => {
  it("gives Kafka's entries for every key Weir knows, but for Weir's defaults and read-only keys", () => {
    const kafka: KafkaEntry[] = describeFixture.results['BROKER:1']
    const ours = new Map(
      describeBrokerConfigs(capturedLayers, { includeSynonyms: true, includeDocumentation: true }).map(
        (e) => [e.name, asKafka(e)],
      ),
    )
    const differences: string[] = []
    for (const e of kafka) {
      const def = brokerConfigDef(e.name)
      assert.ok(def !== undefined)
      const expected = { ...e }
      // Weir reads these at start (README: differences from Kafka).
      if (def.dynamic !== def.kafkaDynamic) {
        expected.readOnly = true
        differences.push(`${e.name}: read-only`)
      }
      // Weir's own defaults show as the DEFAULT_CONFIG synonym.
      const defaultSynonym = e.synonyms.find((s) => s.source === 'DEFAULT_CONFIG')
      if (def.default !== null && defaultSynonym?.value !== def.default) {
        expected.synonyms = [
          ...e.synonyms.filter((s) => s.source !== 'DEFAULT_CONFIG'),
          { name: e.name, value: def.default, source: 'DEFAULT_CONFIG' },
        ]
        if (e.source === 'DEFAULT_CONFIG') expected.value = def.default
        // ... and the doc says so, after Kafka's.
        assert.ok(def.doc.startsWith(`${e.documentation} Weir: `), e.name)
        expected.documentation = def.doc
        differences.push(`${e.name}: default ${def.default}`)
      }
      assert.deepEqual(ours.get(e.name), expected, e.name)
    }
    assert.equal(differences.length, 21, "14 keys read at start, 7 defaults of Weir's own")
  })

  it("gives Kafka's entries for the cluster-default resource", () => {
    const kafka: KafkaEntry[] = describeFixture.results['BROKER:']
    const ours = describeDefaultBrokerConfigs(capturedLayers.dynamicDefault, { includeSynonyms: true })
    assert.deepEqual(ours.map(asKafka), kafka)
  })

  it('shows keys Weir does not know as Kafka shows keys it cannot type: sensitive, UNKNOWN', () => {
    const entries = describeBrokerConfigs(
      { staticBroker: map({ 'ssl.keymanager.algorithm': 'SunX509' }) },
      { includeSynonyms: true, keys: ['ssl.keymanager.algorithm'] },
    )
    assert.deepEqual(entries, [
      {
        name: 'ssl.keymanager.algorithm',
        value: null,
        readOnly: true,
        isDefault: false,
        configSource: ConfigSource.StaticBrokerConfig,
        isSensitive: true,
        synonyms: [
          { name: 'ssl.keymanager.algorithm', value: null, source: ConfigSource.StaticBrokerConfig },
        ],
        configType: ConfigTypeCode.unknown,
        documentation: null,
      },
    ])
  })
})

describe('describeTopicConfigs', () => {
  it('describes a topic with one override', () => {
    const entries = describeTopicConfigs(
      { topic: map({ 'retention.ms': '3600000' }) },
      { includeSynonyms: true },
    )
    const byName = new Map(entries.map((e) => [e.name, e]))
    assert.equal(entries.length, 34)
    assert.deepEqual(byName.get('retention.ms'), {
      name: 'retention.ms',
      value: '3600000',
      readOnly: false,
      isDefault: false,
      configSource: ConfigSource.DynamicTopicConfig,
      isSensitive: false,
      synonyms: [{ name: 'retention.ms', value: '3600000', source: ConfigSource.DynamicTopicConfig }],
      configType: ConfigTypeCode.long,
      documentation: null,
    })
    assert.deepEqual(byName.get('segment.bytes'), {
      name: 'segment.bytes',
      value: '1073741824',
      readOnly: false,
      isDefault: true,
      configSource: ConfigSource.DefaultConfig,
      isSensitive: false,
      synonyms: [{ name: 'log.segment.bytes', value: '1073741824', source: ConfigSource.DefaultConfig }],
      configType: ConfigTypeCode.int,
      documentation: null,
    })
    assert.equal(byName.get('flush.messages')?.value, '9223372036854775807')
    assert.equal(byName.get('min.cleanable.dirty.ratio')?.value, '0.5')
    assert.equal(byName.get('leader.replication.throttled.replicas')?.value, '')
  })

  it('renders the override canonically and leaves synonyms and documentation out unless asked', () => {
    const [entry] = describeTopicConfigs(
      { topic: map({ 'cleanup.policy': ' compact , delete ' }) },
      { keys: ['cleanup.policy', 'no.such.key'] },
    )
    assert.deepEqual(entry?.value, 'compact,delete')
    assert.deepEqual(entry?.synonyms, [])
    assert.equal(entry?.documentation, null)
    const [documented] = describeTopicConfigs({}, { keys: ['segment.ms'], includeDocumentation: true })
    assert.match(documented?.documentation ?? '', /force the log to roll/)
  })

  it("keeps Kafka's quirk: a retention from log.retention.hours shows no synonyms and DEFAULT_CONFIG", () => {
    const [entry] = describeTopicConfigs(
      { staticBroker: map({ 'log.retention.hours': '1' }) },
      { keys: ['retention.ms'], includeSynonyms: true },
    )
    assert.equal(entry?.value, '3600000')
    assert.equal(entry?.configSource, ConfigSource.DefaultConfig)
    assert.deepEqual(entry?.synonyms, [])
    const [fromMs] = describeTopicConfigs(
      { staticBroker: map({ 'log.retention.ms': '5000', 'log.retention.hours': '1' }) },
      { keys: ['retention.ms'], includeSynonyms: true },
    )
    assert.equal(fromMs?.configSource, ConfigSource.StaticBrokerConfig)
    assert.deepEqual(fromMs?.synonyms, [
      { name: 'log.retention.ms', value: '5000', source: ConfigSource.StaticBrokerConfig },
      { name: 'log.retention.hours', value: '1', source: ConfigSource.StaticBrokerConfig },
      { name: 'log.retention.hours', value: '168', source: ConfigSource.DefaultConfig },
    ])
  })
})

// ---------------------------------------------------------------------------------------------
// Resolution
// ---------------------------------------------------------------------------------------------

function retention(layers: TopicConfigLayers): [string | null, number] {
  const resolved = resolveTopicConfig(layers).get('retention.ms')
  return [resolved.text, resolved.source]
}

describe('resolveTopicConfig', () => {
  it("follows Kafka's synonym order: log.retention.ms > .minutes > .hours > default", () => {
    assert.deepEqual(retention({}), ['604800000', ConfigSource.DefaultConfig])
    assert.deepEqual(retention({ staticBroker: map({ 'log.retention.hours': '1' }) }), [
      '3600000',
      ConfigSource.StaticBrokerConfig,
    ])
    const all = { 'log.retention.hours': '1', 'log.retention.minutes': '30', 'log.retention.ms': '1000' }
    assert.deepEqual(retention({ staticBroker: map({ ...all, 'log.retention.ms': '' }) }).slice(0, 1), [
      '1800000',
    ])
    assert.deepEqual(retention({ staticBroker: map(all) }), ['1000', ConfigSource.StaticBrokerConfig])
  })

  it('takes dynamic broker over dynamic default over static, and the topic over all', () => {
    const staticBroker = map({ 'log.retention.minutes': '30' })
    const dynamicDefault = map({ 'log.retention.ms': '5000' })
    const dynamicBroker = map({ 'log.retention.ms': '7000' })
    assert.deepEqual(retention({ staticBroker, dynamicDefault }), [
      '5000',
      ConfigSource.DynamicDefaultBrokerConfig,
    ])
    assert.deepEqual(retention({ staticBroker, dynamicDefault, dynamicBroker }), [
      '7000',
      ConfigSource.DynamicBrokerConfig,
    ])
    const topic = map({ 'retention.ms': '42' })
    assert.deepEqual(retention({ staticBroker, dynamicDefault, dynamicBroker, topic }), [
      '42',
      ConfigSource.DynamicTopicConfig,
    ])
  })

  it('agrees with the formula of KafkaConfig.logRetentionTimeMillis for any mix of the three keys', () => {
    const maybe = (arb: fc.Arbitrary<number>) => fc.option(arb, { nil: undefined })
    const int = fc.integer({ min: -2, max: 2 ** 31 - 1 })
    fc.assert(
      fc.property(
        maybe(fc.integer({ min: -5, max: 2 ** 40 })),
        maybe(int),
        maybe(int),
        (ms, minutes, hours) => {
          const props: Record<string, string> = {}
          if (ms !== undefined) props['log.retention.ms'] = String(ms)
          if (minutes !== undefined) props['log.retention.minutes'] = String(minutes)
          if (hours !== undefined) props['log.retention.hours'] = String(hours)
          const millis = BigInt(ms ?? (minutes !== undefined ? minutes * 60_000 : (hours ?? 168) * 3_600_000))
          const expected = millis < 0n ? -1n : millis
          assert.equal(resolveTopicConfig({ staticBroker: map(props) }).longExact('retention.ms'), expected)
        },
      ),
    )
  })

  it('makes any negative broker retention -1, as Kafka does', () => {
    assert.deepEqual(retention({ staticBroker: map({ 'log.retention.hours': '-1' }) })[0], '-1')
    assert.deepEqual(retention({ dynamicDefault: map({ 'log.retention.ms': '-5' }) })[0], '-1')
  })

  it('ignores read-only keys in dynamic layers and values that do not parse', () => {
    assert.deepEqual(retention({ dynamicDefault: map({ 'log.retention.hours': '1' }) })[0], '604800000')
    const segment = resolveTopicConfig({
      dynamicBroker: map({ 'log.segment.bytes': 'abc' }),
      staticBroker: map({ 'log.segment.bytes': '2097152' }),
    }).get('segment.bytes')
    assert.deepEqual([segment.text, segment.source], ['2097152', ConfigSource.StaticBrokerConfig])
  })

  it('converts hours and falls back through the other synonym groups', () => {
    const config = resolveTopicConfig({
      staticBroker: map({
        'log.roll.hours': '2',
        'log.flush.scheduler.interval.ms': '2000',
        'message.max.bytes': '500',
      }),
    })
    assert.equal(config.long('segment.ms'), 7_200_000)
    assert.equal(config.long('flush.ms'), 2000)
    assert.equal(config.int('max.message.bytes'), 500)
    const flush = resolveTopicConfig({
      staticBroker: map({ 'log.flush.interval.ms': '500', 'log.flush.scheduler.interval.ms': '2000' }),
    })
    assert.equal(flush.long('flush.ms'), 500)
  })

  it('gives typed values by Kafka name', () => {
    const config = resolveTopicConfig({
      topic: map({ 'cleanup.policy': 'compact,delete', 'flush.on.ack': 'false' }),
    })
    assert.deepEqual(config.list('cleanup.policy'), ['compact', 'delete'])
    assert.equal(config.boolean('flush.on.ack'), false)
    assert.equal(config.double('min.cleanable.dirty.ratio'), 0.5)
    assert.equal(config.long('flush.messages'), Number.MAX_SAFE_INTEGER)
    assert.equal(config.longExact('flush.messages'), 2n ** 63n - 1n)
    assert.equal(config.text('flush.messages'), '9223372036854775807')
    assert.equal(config.string('compression.type'), 'producer')
    assert.throws(() => config.int('retention.ms'), /is a long/)
    assert.throws(() => config.get('no.such.key'), /unknown key/)
  })
})

describe('validation and resolution agree', () => {
  const key = fc.constantFrom(...TOPIC_CONFIGS.map((d) => d.name))
  const text = fc.oneof(
    fc.constantFrom(
      '',
      '0',
      '1',
      '-1',
      '-2',
      '14',
      '0.5',
      'true',
      'false',
      'delete',
      'compact,delete',
      'zstd',
      '*',
    ),
    fc.constantFrom('CreateTime', '9223372036854775807', ' 100 ', '1e-1', '0:1', 'abc'),
    fc.integer().map(String),
  )
  it('a topic override that validates is the effective value, shown canonically by DescribeConfigs', () => {
    fc.assert(
      fc.property(fc.dictionary(key, text), (overrides) => {
        const topic = map(overrides)
        const valid = validateTopicConfigs(topic)
        const effective = resolveTopicConfig({ topic })
        const described = new Map(describeTopicConfigs({ topic }).map((e) => [e.name, e]))
        for (const def of TOPIC_CONFIGS) {
          const raw = topic.get(def.name)
          const parsed = raw === undefined ? undefined : parseConfigValue(def, raw)
          const resolved = effective.get(def.name)
          if (parsed?.ok === true) {
            assert.equal(resolved.source, ConfigSource.DynamicTopicConfig)
            assert.equal(resolved.text, parsed.text)
          } else {
            assert.notEqual(resolved.source, ConfigSource.DynamicTopicConfig)
            if (parsed !== undefined) assert.equal(valid.ok, false)
          }
          assert.equal(described.get(def.name)?.value, resolved.text)
          assert.equal(described.get(def.name)?.configSource, resolved.source)
        }
      }),
    )
  })
})

describe('resolveBrokerConfig', () => {
  it('gives broker.id and node.id for each other, as Kafka does', () => {
    assert.equal(resolveBrokerConfig({ staticBroker: map({ 'node.id': '3' }) }).int('broker.id'), 3)
    assert.equal(resolveBrokerConfig({ staticBroker: map({ 'broker.id': '4' }) }).int('node.id'), 4)
    assert.equal(resolveBrokerConfig({}).int('node.id'), 1)
    assert.equal(resolveBrokerConfig({}).int('broker.id'), 1)
  })

  it("leaves a key without default and value empty, and reads Weir's defaults", () => {
    const config = resolveBrokerConfig({})
    assert.equal(config.get('log.retention.ms').value, null)
    assert.equal(config.string('broker.rack'), null)
    assert.deepEqual(config.list('process.roles'), ['broker', 'controller'])
    assert.equal(config.string('listeners'), 'PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093')
    assert.equal(config.int('offsets.topic.replication.factor'), 3)
  })
})

// ---------------------------------------------------------------------------------------------
// Validation against Kafka 4.0
// ---------------------------------------------------------------------------------------------

const validation = fixture('kafka-4.0.0-validation.json')

describe('validateTopicConfigs against Kafka 4.0', () => {
  it("gives Kafka's message for every single-key case, but accepts Weir's flush.on.ack", () => {
    for (const c of validation.topic as {
      configs: Record<string, string>
      createTopics: string | null
      incrementalAlterConfigs: string | null
    }[]) {
      assert.equal(c.createTopics, c.incrementalAlterConfigs)
      const result = validateTopicConfigs(map(c.configs))
      const expected = 'flush.on.ack' in c.configs ? null : c.createTopics
      assert.equal(result.ok ? null : result.error, expected, JSON.stringify(c.configs))
    }
  })

  it("gives Kafka's message for every multi-key case: unknown keys first, then Kafka's order", () => {
    for (const c of validation.topicMulti as {
      configs: Record<string, string>
      createTopics: string | null
    }[]) {
      const result = validateTopicConfigs(map(c.configs))
      assert.equal(result.ok ? null : result.error, c.createTopics, JSON.stringify(c.configs))
    }
  })
})

describe('validateTopicConfigs', () => {
  it('names the key at fault', () => {
    assert.deepEqual(validateTopicConfigs(map({ 'segment.bytes': '1', 'retention.ms': 'x' })), {
      ok: false,
      key: 'segment.bytes',
      error: 'Invalid value 1 for configuration segment.bytes: Value must be at least 14',
    })
    assert.deepEqual(validateTopicConfigs(new Map([['retention.ms', null]])), {
      ok: false,
      key: 'retention.ms',
      error: 'Null value not supported for topic configs: retention.ms',
    })
    assert.deepEqual(validateTopicConfigs(new Map()), { ok: true })
  })

  it('checks the compaction lags against the broker defaults for keys not given', () => {
    const layers = { dynamicDefault: map({ 'log.cleaner.max.compaction.lag.ms': '100' }) }
    assert.deepEqual(validateTopicConfigs(map({ 'min.compaction.lag.ms': '200' }), layers), {
      ok: false,
      key: 'min.compaction.lag.ms',
      error: 'conflict topic config setting min.compaction.lag.ms (200) > max.compaction.lag.ms (100)',
    })
    assert.deepEqual(validateTopicConfigs(map({ 'min.compaction.lag.ms': '200' })), { ok: true })
  })
})

describe('validateBrokerConfigs against Kafka 4.0', () => {
  it("gives Kafka's message for dynamic updates, but refuses the keys Weir reads only at start", () => {
    for (const c of validation.broker as {
      key: string
      value: string
      clusterDefault: string | null
      broker: string | null
    }[]) {
      const def = brokerConfigDef(c.key)
      const weirReadOnly =
        def !== undefined && def.dynamic === 'read-only' && def.kafkaDynamic !== 'read-only'
      const readOnly = `Cannot update these configs dynamically: Set(${c.key})`
      for (const [scope, kafka] of [
        ['cluster-default', c.clusterDefault],
        ['broker', c.broker],
      ] as const) {
        const result = validateBrokerConfigs(map({ [c.key]: c.value }), scope)
        assert.equal(
          result.ok ? null : result.error,
          weirReadOnly ? readOnly : kafka,
          `${scope} ${c.key}=${c.value}`,
        )
      }
    }
  })
})

describe('validateBrokerConfigs', () => {
  it('accepts the captured server.properties, listing the keys Weir does not know', () => {
    assert.deepEqual(validateBrokerConfigs(capturedLayers.staticBroker, 'static'), {
      ok: true,
      unknown: ['share.coordinator.state.topic.replication.factor', 'share.coordinator.state.topic.min.isr'],
    })
    assert.deepEqual(validateBrokerConfigs(new Map(), 'static'), { ok: true, unknown: [] })
  })

  it("applies Kafka's requirements across keys in server.properties", () => {
    const fault = (props: Record<string, string>) => {
      const result = validateBrokerConfigs(map(props), 'static')
      return result.ok ? null : `${result.key}: ${result.error}`
    }
    assert.equal(
      fault({ 'log.retention.ms': '0' }),
      'log.retention.ms: log.retention.ms must be unlimited (-1) or, greater than or equal to 1',
    )
    assert.equal(fault({ 'log.retention.ms': '-7' }), null)
    assert.equal(fault({ 'log.roll.ms': '0' }), 'log.roll.ms: log.roll.ms must be greater than or equal to 1')
    assert.equal(
      fault({ 'log.dirs': '' }),
      'log.dirs: At least one log directory must be defined via log.dirs or log.dir.',
    )
    assert.equal(
      fault({ 'replica.fetch.wait.max.ms': '40000' }),
      'replica.socket.timeout.ms: replica.socket.timeout.ms should always be at least replica.fetch.wait.max.ms to prevent unnecessary socket timeouts',
    )
    assert.equal(
      fault({ 'log.cleaner.dedupe.buffer.size': '1048576' }),
      'log.cleaner.dedupe.buffer.size: log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread.',
    )
    assert.equal(
      fault({ 'node.id': '-1' }),
      'node.id: Invalid value -1 for configuration node.id: Value must be at least 0',
    )
  })

  it('lists every read-only key of a dynamic update and allows deletions', () => {
    assert.deepEqual(validateBrokerConfigs(map({ 'node.id': '2', 'num.partitions': '3' }), 'broker'), {
      ok: false,
      key: 'node.id',
      error: 'Cannot update these configs dynamically: Set(node.id, num.partitions)',
    })
    assert.deepEqual(validateBrokerConfigs(new Map([['log.retention.ms', null]]), 'cluster-default'), {
      ok: true,
      unknown: [],
    })
    assert.deepEqual(validateBrokerConfigs(map({ 'log.flush.on.ack': 'false' }), 'cluster-default'), {
      ok: true,
      unknown: [],
    })
  })
})

import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { BROKER_CONFIGS, brokerConfigDef, brokerConfigSynonyms } from './broker-configs.ts'
import { parseConfigValue } from './definition.ts'
import { TOPIC_CONFIGS } from './topic-configs.ts'

interface KafkaDef {
  name: string
  type: string
  default: string | null
  validator: string | null
  importance: string
  dynamic: string
}

const kafka: { broker: KafkaDef[] } = JSON.parse(
  readFileSync(new URL('./fixtures/kafka-4.0.0-config-defs.json', import.meta.url), 'utf8'),
)

/** Weir's defaults that differ from Kafka's; each doc string says so. */
const WEIR_DEFAULTS: Record<string, string> = {
  'process.roles': 'broker,controller',
  'node.id': '1',
  'broker.id': '1',
  listeners: 'PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093',
  'controller.listener.names': 'CONTROLLER',
  'controller.quorum.voters': '1@127.0.0.1:9093',
  'log.dir': '/tmp/weir-logs',
}

describe('BROKER_CONFIGS', () => {
  it('holds each key once, every Kafka key among them known to Kafka 4.0', () => {
    const names = BROKER_CONFIGS.map((d) => d.name)
    assert.equal(new Set(names).size, names.length)
    assert.deepEqual(
      names.filter((n) => !brokerConfigDef(n)?.weirOnly),
      kafka.broker.map((k) => k.name),
    )
    assert.deepEqual(
      BROKER_CONFIGS.filter((d) => d.weirOnly).map((d) => d.name),
      [
        'http.listeners',
        'http.console.enable',
        'http.metrics.authenticate',
        'log.open.files.max',
        'max.broker.partitions',
        'log.format',
        'log.flush.on.ack',
        'leader.imbalance.per.broker.percentage',
      ],
    )
  })

  it("has Kafka's type, validator, importance and update mode, and Kafka's default unless Weir's is stated", () => {
    for (const k of kafka.broker) {
      const def = brokerConfigDef(k.name)
      assert.ok(def !== undefined)
      assert.deepEqual(
        {
          type: def.type,
          validator: def.validValues ?? null,
          importance: def.importance,
          kafkaDynamic: def.kafkaDynamic,
        },
        {
          type: k.type.toLowerCase(),
          validator: k.validator,
          importance: k.importance.toLowerCase(),
          kafkaDynamic: k.dynamic,
        },
        k.name,
      )
      const weir = WEIR_DEFAULTS[k.name]
      if (weir === undefined) {
        assert.equal(def.default, k.default, k.name)
      } else {
        assert.equal(def.default, weir, k.name)
        assert.match(def.doc, / Weir: defaults to /, k.name)
      }
    }
  })

  it('renders every default as Kafka renders it: it parses, validates and renders to itself', () => {
    for (const def of BROKER_CONFIGS) {
      if (def.default === null) continue
      const parsed = parseConfigValue(def, def.default)
      assert.deepEqual(parsed.ok ? parsed.text : parsed.error, def.default, def.name)
    }
  })

  it('lets only the broker synonyms of topic keys change dynamically, where Kafka does', () => {
    const synonyms = new Set(TOPIC_CONFIGS.flatMap((d) => d.synonyms.map((s) => s.name)))
    for (const def of BROKER_CONFIGS) {
      const expected = synonyms.has(def.name) && (def.kafkaDynamic === 'cluster-wide' || def.weirOnly)
      assert.equal(def.dynamic, expected ? 'cluster-wide' : 'read-only', def.name)
      assert.equal(def.readOnly, def.dynamic === 'read-only', def.name)
    }
  })

  it('knows every broker key Weir serves', () => {
    const named = `node.id process.roles controller.quorum.voters controller.quorum.bootstrap.servers
      controller.listener.names listeners advertised.listeners listener.security.protocol.map
      inter.broker.listener.name log.dirs log.dir num.partitions default.replication.factor
      auto.create.topics.enable min.insync.replicas unclean.leader.election.enable broker.rack
      message.max.bytes socket.request.max.bytes max.connections connections.max.idle.ms
      queued.max.requests replica.lag.time.max.ms replica.fetch.max.bytes replica.fetch.wait.max.ms
      offsets.topic.num.partitions offsets.topic.replication.factor offsets.retention.minutes
      group.initial.rebalance.delay.ms group.min.session.timeout.ms group.max.session.timeout.ms
      group.max.size broker.session.timeout.ms broker.heartbeat.interval.ms
      controller.quorum.election.timeout.ms controller.quorum.fetch.timeout.ms
      controller.quorum.election.backoff.max.ms auto.leader.rebalance.enable
      leader.imbalance.check.interval.seconds delete.topic.enable log.retention.check.interval.ms
      log.flush.interval.messages log.flush.interval.ms log.flush.scheduler.interval.ms
      log.flush.offset.checkpoint.interval.ms log.flush.start.offset.checkpoint.interval.ms
      log.cleaner.enable log.cleaner.threads log.cleaner.dedupe.buffer.size log.cleaner.backoff.ms
      transaction.state.log.num.partitions transaction.state.log.replication.factor
      transaction.state.log.min.isr transaction.max.timeout.ms transactional.id.expiration.ms`
    for (const name of named.split(/\s+/).filter((n) => n !== '')) assert.ok(brokerConfigDef(name), name)
  })

  it("gives Kafka's synonym groups", () => {
    assert.deepEqual(brokerConfigSynonyms('log.retention.hours'), [
      'log.retention.ms',
      'log.retention.minutes',
      'log.retention.hours',
    ])
    assert.deepEqual(brokerConfigSynonyms('log.roll.ms'), ['log.roll.ms', 'log.roll.hours'])
    assert.deepEqual(brokerConfigSynonyms('log.flush.interval.ms'), [
      'log.flush.interval.ms',
      'log.flush.scheduler.interval.ms',
    ])
    assert.deepEqual(brokerConfigSynonyms('log.flush.scheduler.interval.ms'), [
      'log.flush.scheduler.interval.ms',
    ])
    assert.deepEqual(brokerConfigSynonyms('num.partitions'), ['num.partitions'])
  })
})

import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { BROKER_CONFIG_BY_NAME } from './broker-configs.ts'
import { parseConfigValue } from './definition.ts'
import { TOPIC_CONFIGS, topicConfigDef } from './topic-configs.ts'

interface KafkaDef {
  name: string
  type: string
  default: string | null
  validator: string | null
  importance: string
  synonyms?: { name: string; unit: 'identity' | 'minutes' | 'hours' }[]
}

const kafka: { topic: KafkaDef[] } = JSON.parse(
  readFileSync(new URL('./fixtures/kafka-4.0.0-config-defs.json', import.meta.url), 'utf8'),
)

describe('TOPIC_CONFIGS', () => {
  it("holds Kafka 4.0's 33 topic keys in Kafka's order, then Weir's flush.on.ack", () => {
    assert.deepEqual(
      TOPIC_CONFIGS.map((d) => d.name),
      [...kafka.topic.map((k) => k.name), 'flush.on.ack'],
    )
    assert.deepEqual(
      TOPIC_CONFIGS.filter((d) => d.weirOnly).map((d) => d.name),
      ['flush.on.ack'],
    )
    assert.equal(topicConfigDef('message.downconversion.enable'), undefined, 'removed in Kafka 4.0')
  })

  it("has Kafka's type, default, validator, importance and synonyms for every key", () => {
    for (const k of kafka.topic) {
      const def = topicConfigDef(k.name)
      assert.ok(def !== undefined)
      const scale = { identity: 1, minutes: 60_000, hours: 3_600_000 }
      assert.deepEqual(
        {
          type: def.type,
          default: def.default,
          validator: def.validValues ?? null,
          importance: def.importance,
          synonyms: def.synonyms,
        },
        {
          type: k.type.toLowerCase(),
          default: k.default,
          validator: k.validator,
          importance: k.importance.toLowerCase(),
          synonyms: (k.synonyms ?? []).map((s) => ({ name: s.name, scale: scale[s.unit] })),
        },
        k.name,
      )
    }
  })

  it('renders every default as Kafka renders it: it parses, validates and renders to itself', () => {
    for (const def of TOPIC_CONFIGS) {
      assert.ok(def.default !== null, def.name)
      const parsed = parseConfigValue(def, def.default)
      assert.deepEqual(parsed.ok ? parsed.text : parsed.error, def.default, def.name)
    }
  })

  it('names a broker key Weir knows for every synonym, of a type that converts', () => {
    for (const def of TOPIC_CONFIGS) {
      for (const synonym of def.synonyms) {
        const broker = BROKER_CONFIG_BY_NAME.get(synonym.name)
        assert.ok(broker !== undefined, `${def.name} <- ${synonym.name}`)
        if (synonym.scale !== 1) assert.ok(['int', 'long'].includes(broker.type), synonym.name)
        else assert.equal(broker.type === 'short' ? 'int' : broker.type, def.type, synonym.name)
      }
    }
  })

  it('is never read-only or sensitive, and documents every key', () => {
    for (const def of TOPIC_CONFIGS) {
      assert.equal(def.readOnly, false)
      assert.equal(def.sensitive, false)
      assert.ok(def.doc.length > 20, def.name)
    }
    assert.match(topicConfigDef('flush.on.ack')?.doc ?? '', /^Weir: /)
  })
})

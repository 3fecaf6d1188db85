import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { BROKER_CONFIG_BY_NAME } from './broker-configs.ts'
import {
  type ConfigDef,
  javaDoubleToString,
  longToNumber,
  parseBooleanValue,
  parseConfigValue,
  parseDoubleValue,
  parseIntValue,
  parseListValue,
  parseLongValue,
  parseShortValue,
  renderConfigValue,
} from './definition.ts'
import { TOPIC_CONFIG_BY_NAME } from './topic-configs.ts'

interface ParseCase {
  scope: 'topic' | 'broker'
  key: string
  value: string
  canonical?: string
  error?: string
}

const parseCases: { cases: ParseCase[] } = JSON.parse(
  readFileSync(new URL('./fixtures/kafka-4.0.0-parse-cases.json', import.meta.url), 'utf8'),
)

function defOf(scope: 'topic' | 'broker', key: string): ConfigDef {
  const def = scope === 'topic' ? TOPIC_CONFIG_BY_NAME.get(key) : BROKER_CONFIG_BY_NAME.get(key)
  assert.ok(def !== undefined, `${scope} ${key}`)
  return def
}

describe('parseConfigValue against Kafka 4.0', () => {
  it(`gives Kafka's canonical text or message in all ${parseCases.cases.length} captured cases`, () => {
    const failures: string[] = []
    for (const c of parseCases.cases) {
      const result = parseConfigValue(defOf(c.scope, c.key), c.value)
      const ours = result.ok ? { canonical: result.text } : { error: result.error }
      const kafka = c.error !== undefined ? { error: c.error } : { canonical: c.canonical }
      if (JSON.stringify(ours) !== JSON.stringify(kafka)) {
        failures.push(
          `${c.scope} ${c.key}=${JSON.stringify(c.value)}: ${JSON.stringify(ours)} != ${JSON.stringify(kafka)}`,
        )
      }
    }
    assert.deepEqual(failures, [])
  })

  it('names the key and shows the raw text when the type does not parse', () => {
    const retention = defOf('topic', 'retention.ms')
    assert.deepEqual(parseConfigValue(retention, ''), {
      ok: false,
      error: 'Invalid value  for configuration retention.ms: Not a number of type LONG',
    })
    assert.deepEqual(parseConfigValue(defOf('topic', 'preallocate'), 'maybe'), {
      ok: false,
      error: 'Invalid value maybe for configuration preallocate: Expected value to be either true or false',
    })
  })

  it("refuses a quorum port out of range, as Java's InetSocketAddress does", () => {
    const voters = BROKER_CONFIG_BY_NAME.get('controller.quorum.voters')
    const bootstrap = BROKER_CONFIG_BY_NAME.get('controller.quorum.bootstrap.servers')
    assert.ok(voters !== undefined && bootstrap !== undefined)
    assert.deepEqual(parseConfigValue(voters, '1@h:99999'), { ok: false, error: 'port out of range:99999' })
    assert.deepEqual(parseConfigValue(bootstrap, 'h:65536'), { ok: false, error: 'port out of range:65536' })
    assert.equal(parseConfigValue(voters, '1@h:65535').ok, true)
  })

  it('shows the parsed value when the validator refuses it', () => {
    assert.deepEqual(parseConfigValue(defOf('topic', 'min.cleanable.dirty.ratio'), '2'), {
      ok: false,
      error: 'Invalid value 2.0 for configuration min.cleanable.dirty.ratio: Value must be no more than 1',
    })
    assert.deepEqual(parseConfigValue(defOf('topic', 'retention.ms'), '-9223372036854775808'), {
      ok: false,
      error: 'Invalid value -9223372036854775808 for configuration retention.ms: Value must be at least -1',
    })
    assert.deepEqual(
      parseConfigValue(defOf('topic', 'leader.replication.throttled.replicas'), '0:1, 1 : 2'),
      {
        ok: false,
        error:
          "Invalid value [0:1, 1 : 2] for configuration leader.replication.throttled.replicas: leader.replication.throttled.replicas must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...",
      },
    )
  })
})

describe('typed parsers', () => {
  it('read ints, shorts and longs as Java does', () => {
    assert.equal(parseIntValue(' +7 '), 7)
    assert.equal(parseIntValue('007'), 7)
    assert.equal(parseIntValue('2147483648'), undefined)
    assert.equal(parseIntValue('1e3'), undefined)
    assert.equal(parseShortValue('-32768'), -32768)
    assert.equal(parseShortValue('32768'), undefined)
    assert.equal(parseLongValue('9223372036854775807'), 9223372036854775807n)
    assert.equal(parseLongValue('9223372036854775808'), undefined)
  })

  it('read booleans, doubles and lists as Java does', () => {
    assert.equal(parseBooleanValue(' TRUE '), true)
    assert.equal(parseBooleanValue('yes'), undefined)
    assert.equal(parseDoubleValue('1.5d'), 1.5)
    assert.equal(parseDoubleValue('0x1.8p1'), 3)
    assert.equal(parseDoubleValue('1,5'), undefined)
    assert.deepEqual(parseListValue(' a , b,,c '), ['a', 'b', '', 'c'])
    assert.deepEqual(parseListValue('  '), [])
  })

  it('keep longs exact and saturate them only on request', () => {
    const max = parseLongValue('9223372036854775807')
    assert.ok(max !== undefined)
    assert.equal(renderConfigValue('long', max), '9223372036854775807')
    assert.equal(longToNumber(max), Number.MAX_SAFE_INTEGER)
    assert.equal(longToNumber(-max), -Number.MAX_SAFE_INTEGER)
    assert.equal(longToNumber(604800000n), 604800000)
  })
})

describe('javaDoubleToString', () => {
  it('prints as Java does', () => {
    const cases: [number, string][] = [
      [0.5, '0.5'],
      [1, '1.0'],
      [0, '0.0'],
      [-0, '-0.0'],
      [0.001, '0.001'],
      [0.0009, '9.0E-4'],
      [1e-5, '1.0E-5'],
      [9999999, '9999999.0'],
      [1e7, '1.0E7'],
      [123456789.125, '1.23456789125E8'],
      [1.7976931348623157e308, '1.7976931348623157E308'],
      [5e-324, '4.9E-324'],
      [1e23, '1.0E23'],
      [-2e-7, '-2.0E-7'],
      [Number.NaN, 'NaN'],
      [Number.NEGATIVE_INFINITY, '-Infinity'],
    ]
    for (const [d, text] of cases) assert.equal(javaDoubleToString(d), text)
  })

  it('round-trips every double through parseDoubleValue', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true }), (d) => {
        assert.ok(Object.is(parseDoubleValue(javaDoubleToString(d)), d))
      }),
    )
  })
})

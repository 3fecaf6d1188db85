import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { DEFAULT_LOG_CONFIG, logManagerConfig, NEVER_MS, topicLogConfig } from './log-config.ts'

describe('log config', () => {
  it('has Kafka 4 defaults, safe flushing on ack, and "never" as NEVER_MS', () => {
    assert.equal(DEFAULT_LOG_CONFIG.segmentBytes, 1024 ** 3)
    assert.equal(DEFAULT_LOG_CONFIG.indexIntervalBytes, 4096)
    assert.equal(DEFAULT_LOG_CONFIG.retentionMs, 7 * 24 * 3600 * 1000)
    assert.equal(DEFAULT_LOG_CONFIG.retentionBytes, -1)
    assert.equal(DEFAULT_LOG_CONFIG.flushMessages, NEVER_MS)
    assert.equal(DEFAULT_LOG_CONFIG.flushOnAck, true)
    assert.deepEqual(DEFAULT_LOG_CONFIG.cleanupPolicy, { delete: true, compact: false })
  })

  it('reads topic overrides over broker synonyms by Kafka names', () => {
    const c = topicLogConfig({
      topic: new Map([
        ['cleanup.policy', 'compact,delete'],
        ['segment.bytes', '1048576'],
      ]),
      staticBroker: new Map([
        ['log.retention.hours', '2'],
        ['log.flush.interval.messages', '1'],
        ['log.flush.on.ack', 'false'],
      ]),
    })
    assert.deepEqual(c.cleanupPolicy, { delete: true, compact: true })
    assert.equal(c.segmentBytes, 1048576)
    assert.equal(c.retentionMs, 2 * 3600 * 1000)
    assert.equal(c.flushMessages, 1)
    assert.equal(c.flushOnAck, false)
  })

  it('reads the manager settings from broker keys', () => {
    const m = logManagerConfig({ staticBroker: new Map([['log.cleaner.dedupe.buffer.size', '1048576']]) })
    assert.equal(m.cleanerDedupeBufferBytes, 1048576)
    assert.equal(m.retentionCheckIntervalMs, 300_000)
    assert.equal(m.flushSchedulerIntervalMs, NEVER_MS)
  })
})

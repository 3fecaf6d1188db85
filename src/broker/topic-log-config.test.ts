import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ConfigResourceType, EMPTY_IMAGE, MetadataDelta, type MetadataImage } from '../metadata/index.ts'
import type { TopicName, Uuid } from '../model/index.ts'
import { decodeMetadataRecord, encodeMetadataRecord, metadataRecordTypes as T } from '../protocol/index.ts'
import type { LogConfig, PartitionLog } from '../storage/index.ts'
import {
  topicEffectiveConfig,
  topicLogConfig,
  topicsWithChangedConfig,
  updateLogConfigs,
} from './topic-log-config.ts'

const node = { nodeId: 1, staticBroker: new Map([['log.retention.hours', '1']]) }

function publish(image: MetadataImage, records: Array<[type: unknown, data: unknown]>) {
  const delta = new MetadataDelta(image)
  for (const [i, [type, data]] of records.entries()) {
    const bytes = encodeMetadataRecord(type as never, 0, data as never)
    delta.replay(decodeMetadataRecord(bytes), { offset: image.provenance.offset + 1n + BigInt(i), epoch: 1 })
  }
  const { image: next, changes } = delta.apply()
  return { image: next, changes, leaderChanges: [] }
}

const topic = (name: string, n: number) =>
  [T.Topic, { name: name as TopicName, topicId: Buffer.alloc(16, n).toString('base64url') as Uuid }] as [
    unknown,
    unknown,
  ]
const config = (resourceType: number, resourceName: string, name: string, value: string | null) =>
  [T.Config, { resourceType, resourceName, name, value }] as [unknown, unknown]

function fakeLog(topicName: string) {
  const seen: LogConfig[] = []
  return {
    topic: topicName,
    seen,
    log: { updateConfig: (c: LogConfig) => seen.push(c) } as unknown as PartitionLog,
  }
}

test('a topic resolves its overrides over this node dynamic and static broker configs', () => {
  const p = publish(EMPTY_IMAGE, [
    topic('a', 1),
    config(ConfigResourceType.Topic, 'a', 'segment.bytes', '1048576'),
    config(ConfigResourceType.Broker, '1', 'log.segment.bytes', '2097152'),
    config(ConfigResourceType.Broker, '2', 'log.retention.ms', '5'),
    config(ConfigResourceType.Broker, '', 'min.insync.replicas', '2'),
  ])
  assert.equal(topicEffectiveConfig(p.image, 'a', node).int('min.insync.replicas'), 2)
  assert.equal(topicLogConfig(p.image, 'a', node).segmentBytes, 1048576)
  assert.equal(topicLogConfig(p.image, 'b', node).segmentBytes, 2097152)
  // Broker 2's dynamic config is not this node's; server.properties says one hour.
  assert.equal(topicLogConfig(p.image, 'a', node).retentionMs, 3_600_000)
})

test('which topics a publication touches: their own configs, creation, or all on broker changes', () => {
  const first = publish(EMPTY_IMAGE, [topic('a', 1), topic('b', 2)])
  assert.deepEqual(topicsWithChangedConfig(first, 1), new Set(['a', 'b']))
  const own = publish(first.image, [config(ConfigResourceType.Topic, 'b', 'retention.ms', '5')])
  assert.deepEqual(topicsWithChangedConfig(own, 1), new Set(['b']))
  const other = publish(first.image, [config(ConfigResourceType.Broker, '2', 'log.retention.ms', '5')])
  assert.deepEqual(topicsWithChangedConfig(other, 1), new Set())
  const cluster = publish(first.image, [config(ConfigResourceType.Broker, '', 'log.retention.ms', '5')])
  assert.equal(topicsWithChangedConfig(cluster, 1), 'all')
})

test('open logs get their new LogConfig when a ConfigRecord commits', () => {
  const first = publish(EMPTY_IMAGE, [topic('a', 1), topic('b', 2)])
  const a0 = fakeLog('a')
  const a1 = fakeLog('a')
  const b0 = fakeLog('b')
  const logs = [a0, a1, b0]
  const own = publish(first.image, [config(ConfigResourceType.Topic, 'a', 'retention.ms', '1000')])
  assert.equal(updateLogConfigs(own, logs, node), 2)
  assert.deepEqual(
    [a0.seen.map((c) => c.retentionMs), a1.seen.map((c) => c.retentionMs), b0.seen.length],
    [[1000], [1000], 0],
  )
  const cluster = publish(own.image, [config(ConfigResourceType.Broker, '', 'log.segment.bytes', '2097152')])
  assert.equal(updateLogConfigs(cluster, logs, node), 3)
  assert.equal(b0.seen[0]?.segmentBytes, 2097152)
  assert.equal(a0.seen[1]?.retentionMs, 1000)
  const removed = publish(cluster.image, [config(ConfigResourceType.Topic, 'a', 'retention.ms', null)])
  updateLogConfigs(removed, logs, node)
  assert.equal(a0.seen[2]?.retentionMs, 3_600_000)
})

/**
 * A topic's effective log settings on this node (its dynamic overrides over this node's dynamic and
 * static broker configs, from the metadata image), and keeping open logs in step when ConfigRecords
 * change them. The replica manager and the log directories get their LogConfig from here.
 */
import { type EffectiveConfig, resolveTopicConfig } from '../config/index.ts'
import { type NodeConfigSource, topicConfigLayers } from '../controller/index.ts'
import {
  ConfigResourceType,
  configKey,
  type ImagePublication,
  type MetadataImage,
} from '../metadata/index.ts'
import { type LogConfig, topicLogConfig as logConfigOf, type PartitionLog } from '../storage/index.ts'

/**
 * The LogConfig `node` gives `topic`'s logs: `retention.ms` and friends from the topic's overrides,
 * else the broker synonyms (`log.retention.ms`, ...) from this node's dynamic config, the cluster
 * defaults and server.properties, else Kafka's defaults. Example:
 * `topicLogConfig(node.image, 'orders', { nodeId: 1, staticBroker })`.
 */
export function topicLogConfig(image: MetadataImage, topic: string, node: NodeConfigSource): LogConfig {
  return logConfigOf(topicConfigLayers(image, topic, node))
}

/**
 * Every topic key's effective value on `node`, for settings that are not the log's own
 * (`min.insync.replicas`, `unclean.leader.election.enable`): `.int('min.insync.replicas')`.
 */
export function topicEffectiveConfig(
  image: MetadataImage,
  topic: string,
  node: NodeConfigSource,
): EffectiveConfig {
  return resolveTopicConfig(topicConfigLayers(image, topic, node))
}

/**
 * The topics whose LogConfig may have changed in a publication: every topic when this node's or the
 * cluster's dynamic broker configs changed, else the topics whose own configs changed or that were
 * created. `'all'` or a set of names.
 */
export function topicsWithChangedConfig(
  p: Pick<ImagePublication, 'changes'>,
  nodeId: number,
): 'all' | ReadonlySet<string> {
  const brokerKeys = new Set([
    configKey(ConfigResourceType.Broker, ''),
    configKey(ConfigResourceType.Broker, String(nodeId)),
  ])
  const topicPrefix = configKey(ConfigResourceType.Topic, '')
  const topics = new Set<string>()
  for (const key of p.changes.changedConfigs) {
    if (brokerKeys.has(key)) return 'all'
    if (key.startsWith(topicPrefix)) topics.add(key.slice(topicPrefix.length))
  }
  for (const t of p.changes.createdTopics) topics.add(t.name)
  return topics
}

/**
 * Hands every open log whose topic's settings may have changed its new LogConfig (Kafka's
 * DynamicConfigPublisher -> LogManager.updateTopicConfig). Returns how many logs were updated.
 */
export function updateLogConfigs(
  p: ImagePublication,
  logs: Iterable<{ readonly topic: string; readonly log: PartitionLog }>,
  node: NodeConfigSource,
): number {
  const changed = topicsWithChangedConfig(p, node.nodeId)
  if (changed !== 'all' && changed.size === 0) return 0
  const configs = new Map<string, LogConfig>()
  let n = 0
  for (const { topic, log } of logs) {
    if (changed !== 'all' && !changed.has(topic)) continue
    let config = configs.get(topic)
    if (config === undefined) {
      config = topicLogConfig(p.image, topic, node)
      configs.set(topic, config)
    }
    log.updateConfig(config)
    n++
  }
  return n
}

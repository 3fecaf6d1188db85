/**
 * The topic-level configs: every key Kafka 4.0 defines (LogConfig), in Kafka's order, with its
 * broker synonyms, and Weir's own `flush.on.ack`. Data only: resolution lives in resolve.ts.
 */
import {
  atLeast,
  between,
  type ConfigDef,
  eachOneOf,
  gzipLevel,
  oneOf,
  throttledReplicas,
} from './definition.ts'

/**
 * A broker key that supplies a topic key's default, and the factor from the broker key's unit to
 * the topic key's (`log.retention.hours` -> `retention.ms`: 3_600_000).
 */
export interface BrokerSynonym {
  readonly name: string
  readonly scale: 1 | 60_000 | 3_600_000
}

/** A topic key. Its default comes from its broker synonyms (first set wins), else `default`. */
export interface TopicConfigDef extends ConfigDef {
  /**
   * Kafka's ServerTopicConfigSynonyms, in precedence order: `retention.ms` <- `log.retention.ms`,
   * `log.retention.minutes`, `log.retention.hours`. Empty: the topic key has no broker default.
   */
  readonly synonyms: readonly BrokerSynonym[]
  /** Weir's own key, which Kafka does not know (so Kafka's tools may not list it). */
  readonly weirOnly: boolean
}

function same(name: string): BrokerSynonym {
  return { name, scale: 1 }
}
function minutes(name: string): BrokerSynonym {
  return { name, scale: 60_000 }
}
function hours(name: string): BrokerSynonym {
  return { name, scale: 3_600_000 }
}

type TopicSpec = Omit<TopicConfigDef, 'readOnly' | 'sensitive' | 'weirOnly'> & { readonly weirOnly?: boolean }

function topicConfigs(specs: readonly TopicSpec[]): readonly TopicConfigDef[] {
  return Object.freeze(
    specs.map((spec) =>
      Object.freeze({
        ...spec,
        synonyms: Object.freeze(spec.synonyms.map((s) => Object.freeze(s))),
        readOnly: false,
        sensitive: spec.type === 'password',
        weirOnly: spec.weirOnly ?? false,
      }),
    ),
  )
}

/** Every topic key, Kafka 4.0's in Kafka's definition order (the order it validates in), then Weir's. */
export const TOPIC_CONFIGS: readonly TopicConfigDef[] = topicConfigs([
  {
    name: 'segment.bytes',
    type: 'int',
    default: '1073741824',
    ...atLeast(14),
    importance: 'medium',
    synonyms: [same('log.segment.bytes')],
    doc: 'This configuration controls the segment file size for the log. Retention and cleaning is always done a file at a time so a larger segment size means fewer files but less granular control over retention.',
  },
  {
    name: 'segment.ms',
    type: 'long',
    default: '604800000',
    ...atLeast(1),
    importance: 'medium',
    synonyms: [same('log.roll.ms'), hours('log.roll.hours')],
    doc: "This configuration controls the period of time after which Kafka will force the log to roll even if the segment file isn't full to ensure that retention can delete or compact old data.",
  },
  {
    name: 'segment.jitter.ms',
    type: 'long',
    default: '0',
    ...atLeast(0),
    importance: 'medium',
    synonyms: [same('log.roll.jitter.ms'), hours('log.roll.jitter.hours')],
    doc: 'The maximum random jitter subtracted from the scheduled segment roll time to avoid thundering herds of segment rolling',
  },
  {
    name: 'segment.index.bytes',
    type: 'int',
    default: '10485760',
    ...atLeast(4),
    importance: 'medium',
    synonyms: [same('log.index.size.max.bytes')],
    doc: 'This configuration controls the size of the index that maps offsets to file positions. We preallocate this index file and shrink it only after log rolls. You generally should not need to change this setting.',
  },
  {
    name: 'flush.messages',
    type: 'long',
    default: '9223372036854775807',
    ...atLeast(1),
    importance: 'medium',
    synonyms: [same('log.flush.interval.messages')],
    doc: 'This setting allows specifying an interval at which we will force an fsync of data written to the log. For example if this was set to 1 we would fsync after every message; if it were 5 we would fsync after every five messages. In general we recommend you not set this and use replication for durability and allow the operating system\'s background flush capabilities as it is more efficient. This setting can be overridden on a per-topic basis (see <a href="#topicconfigs">the per-topic configuration section</a>).',
  },
  {
    name: 'flush.ms',
    type: 'long',
    default: '9223372036854775807',
    ...atLeast(0),
    importance: 'medium',
    synonyms: [same('log.flush.interval.ms'), same('log.flush.scheduler.interval.ms')],
    doc: "This setting allows specifying a time interval at which we will force an fsync of data written to the log. For example if this was set to 1000 we would fsync after 1000 ms had passed. In general we recommend you not set this and use replication for durability and allow the operating system's background flush capabilities as it is more efficient.",
  },
  {
    name: 'retention.bytes',
    type: 'long',
    default: '-1',
    importance: 'medium',
    synonyms: [same('log.retention.bytes')],
    doc: 'This configuration controls the maximum size a partition (which consists of log segments) can grow to before we will discard old log segments to free up space if we are using the "delete" retention policy. By default there is no size limit only a time limit. Since this limit is enforced at the partition level, multiply it by the number of partitions to compute the topic retention in bytes. Additionally, retention.bytes configuration operates independently of "segment.ms" and "segment.bytes" configurations. Moreover, it triggers the rolling of new segment if the retention.bytes is configured to zero.',
  },
  {
    name: 'retention.ms',
    type: 'long',
    default: '604800000',
    ...atLeast(-1),
    importance: 'medium',
    synonyms: [same('log.retention.ms'), minutes('log.retention.minutes'), hours('log.retention.hours')],
    doc: 'This configuration controls the maximum time we will retain a log before we will discard old log segments to free up space if we are using the "delete" retention policy. This represents an SLA on how soon consumers must read their data. If set to -1, no time limit is applied. Additionally, retention.ms configuration operates independently of "segment.ms" and "segment.bytes" configurations. Moreover, it triggers the rolling of new segment if the retention.ms condition is satisfied.',
  },
  {
    name: 'max.message.bytes',
    type: 'int',
    default: '1048588',
    ...atLeast(0),
    importance: 'medium',
    synonyms: [same('message.max.bytes')],
    doc: "The largest record batch size allowed by Kafka (after compression if compression is enabled). If this is increased and there are consumers older than 0.10.2, the consumers' fetch size must also be increased so that they can fetch record batches this large. In the latest message format version, records are always grouped into batches for efficiency. In previous message format versions, uncompressed records are not grouped into batches and this limit only applies to a single record in that case.",
  },
  {
    name: 'index.interval.bytes',
    type: 'int',
    default: '4096',
    ...atLeast(0),
    importance: 'medium',
    synonyms: [same('log.index.interval.bytes')],
    doc: "This setting controls how frequently Kafka adds an index entry to its offset index. The default setting ensures that we index a message roughly every 4096 bytes. More indexing allows reads to jump closer to the exact position in the log but makes the index larger. You probably don't need to change this.",
  },
  {
    name: 'delete.retention.ms',
    type: 'long',
    default: '86400000',
    ...atLeast(0),
    importance: 'medium',
    synonyms: [same('log.cleaner.delete.retention.ms')],
    doc: 'The amount of time to retain delete tombstone markers for <a href="#compaction">log compacted</a> topics. This setting also gives a bound on the time in which a consumer must complete a read if they begin from offset 0 to ensure that they get a valid snapshot of the final stage (otherwise delete tombstones may be collected before they complete their scan).',
  },
  {
    name: 'min.compaction.lag.ms',
    type: 'long',
    default: '0',
    ...atLeast(0),
    importance: 'medium',
    synonyms: [same('log.cleaner.min.compaction.lag.ms')],
    doc: 'The minimum time a message will remain uncompacted in the log. Only applicable for logs that are being compacted.',
  },
  {
    name: 'max.compaction.lag.ms',
    type: 'long',
    default: '9223372036854775807',
    ...atLeast(1),
    importance: 'medium',
    synonyms: [same('log.cleaner.max.compaction.lag.ms')],
    doc: 'The maximum time a message will remain ineligible for compaction in the log. Only applicable for logs that are being compacted.',
  },
  {
    name: 'file.delete.delay.ms',
    type: 'long',
    default: '60000',
    ...atLeast(0),
    importance: 'medium',
    synonyms: [same('log.segment.delete.delay.ms')],
    doc: 'The time to wait before deleting a file from the filesystem',
  },
  {
    name: 'min.cleanable.dirty.ratio',
    type: 'double',
    default: '0.5',
    ...between(0, 1, { double: true }),
    importance: 'medium',
    synonyms: [same('log.cleaner.min.cleanable.ratio')],
    doc: 'This configuration controls how frequently the log compactor will attempt to clean the log (assuming <a href="#compaction">log compaction</a> is enabled). By default we will avoid cleaning a log where more than 50% of the log has been compacted. This ratio bounds the maximum space wasted in the log by duplicates (at 50% at most 50% of the log could be duplicates). A higher ratio will mean fewer, more efficient cleanings but will mean more wasted space in the log. If the max.compaction.lag.ms or the min.compaction.lag.ms configurations are also specified, then the log compactor considers the log to be eligible for compaction as soon as either: (i) the dirty ratio threshold has been met and the log has had dirty (uncompacted) records for at least the min.compaction.lag.ms duration, or (ii) if the log has had dirty (uncompacted) records for at most the max.compaction.lag.ms period.',
  },
  {
    name: 'cleanup.policy',
    type: 'list',
    default: 'delete',
    ...eachOneOf(['compact', 'delete']),
    importance: 'medium',
    synonyms: [same('log.cleanup.policy')],
    doc: 'This config designates the retention policy to use on log segments. The "delete" policy (which is the default) will discard old segments when their retention time or size limit has been reached. The "compact" policy will enable <a href="#compaction">log compaction</a>, which retains the latest value for each key. It is also possible to specify both policies in a comma-separated list (e.g. "delete,compact"). In this case, old segments will be discarded per the retention time and size configuration, while retained segments will be compacted.',
  },
  {
    name: 'unclean.leader.election.enable',
    type: 'boolean',
    default: 'false',
    importance: 'medium',
    synonyms: [same('unclean.leader.election.enable')],
    doc: 'Indicates whether to enable replicas not in the ISR set to be elected as leader as a last resort, even though doing so may result in data loss.<p>Note: In KRaft mode, when enabling this config dynamically, it needs to wait for the unclean leader electionthread to trigger election periodically (default is 5 minutes). Please run `kafka-leader-election.sh` with `unclean` option to trigger the unclean leader election immediately if needed.</p>',
  },
  {
    name: 'min.insync.replicas',
    type: 'int',
    default: '1',
    ...atLeast(1),
    importance: 'medium',
    synonyms: [same('min.insync.replicas')],
    doc: 'When a producer sets acks to "all" (or "-1"), this configuration specifies the minimum number of replicas that must acknowledge a write for the write to be considered successful. If this minimum cannot be met, then the producer will raise an exception (either <code>NotEnoughReplicas</code> or <code>NotEnoughReplicasAfterAppend</code>).<br> Regardless of the <code>acks</code> setting, the messages will not be visible to the consumers until they are replicated to all in-sync replicas and the <code>min.insync.replicas</code> condition is met.<br> When used together, <code>min.insync.replicas</code> and <code>acks</code> allow you to enforce greater durability guarantees. A typical scenario would be to create a topic with a replication factor of 3, set <code>min.insync.replicas</code> to 2, and produce with <code>acks</code> of "all". This will ensure that a majority of replicas must persist a write before it\'s considered successful by the producer and it\'s visible to consumers.',
  },
  {
    name: 'compression.type',
    type: 'string',
    default: 'producer',
    ...oneOf(['uncompressed', 'zstd', 'lz4', 'snappy', 'gzip', 'producer']),
    importance: 'medium',
    synonyms: [same('compression.type')],
    doc: "Specify the final compression type for a given topic. This configuration accepts the standard compression codecs ('gzip', 'snappy', 'lz4', 'zstd'). It additionally accepts 'uncompressed' which is equivalent to no compression; and 'producer' which means retain the original compression codec set by the producer.",
  },
  {
    name: 'compression.gzip.level',
    type: 'int',
    default: '-1',
    ...gzipLevel(),
    importance: 'medium',
    synonyms: [same('compression.gzip.level')],
    doc: 'The compression level to use if compression.type is set to <code>gzip</code>.',
  },
  {
    name: 'compression.lz4.level',
    type: 'int',
    default: '9',
    ...between(1, 17),
    importance: 'medium',
    synonyms: [same('compression.lz4.level')],
    doc: 'The compression level to use if compression.type is set to <code>lz4</code>.',
  },
  {
    name: 'compression.zstd.level',
    type: 'int',
    default: '3',
    ...between(-131072, 22),
    importance: 'medium',
    synonyms: [same('compression.zstd.level')],
    doc: 'The compression level to use if compression.type is set to <code>zstd</code>.',
  },
  {
    name: 'preallocate',
    type: 'boolean',
    default: 'false',
    importance: 'medium',
    synonyms: [same('log.preallocate')],
    doc: 'True if we should preallocate the file on disk when creating a new log segment.',
  },
  {
    name: 'message.timestamp.type',
    type: 'string',
    default: 'CreateTime',
    ...oneOf(['CreateTime', 'LogAppendTime']),
    importance: 'medium',
    synonyms: [same('log.message.timestamp.type')],
    doc: 'Define whether the timestamp in the message is message create time or log append time.',
  },
  {
    name: 'message.timestamp.before.max.ms',
    type: 'long',
    default: '9223372036854775807',
    ...atLeast(0),
    importance: 'medium',
    synonyms: [same('log.message.timestamp.before.max.ms')],
    doc: "This configuration sets the allowable timestamp difference between the broker's timestamp and the message timestamp. The message timestamp can be earlier than or equal to the broker's timestamp, with the maximum allowable difference determined by the value set in this configuration. If message.timestamp.type=CreateTime, the message will be rejected if the difference in timestamps exceeds this specified threshold. This configuration is ignored if message.timestamp.type=LogAppendTime.",
  },
  {
    name: 'message.timestamp.after.max.ms',
    type: 'long',
    default: '3600000',
    ...atLeast(0),
    importance: 'medium',
    synonyms: [same('log.message.timestamp.after.max.ms')],
    doc: "This configuration sets the allowable timestamp difference between the message timestamp and the broker's timestamp. The message timestamp can be later than or equal to the broker's timestamp, with the maximum allowable difference determined by the value set in this configuration. If message.timestamp.type=CreateTime, the message will be rejected if the difference in timestamps exceeds this specified threshold. This configuration is ignored if message.timestamp.type=LogAppendTime.",
  },
  {
    name: 'leader.replication.throttled.replicas',
    type: 'list',
    default: '',
    ...throttledReplicas(),
    importance: 'medium',
    synonyms: [],
    doc: "A list of replicas for which log replication should be throttled on the leader side. The list should describe a set of replicas in the form [PartitionId]:[BrokerId],[PartitionId]:[BrokerId]:... or alternatively the wildcard '*' can be used to throttle all replicas for this topic.",
  },
  {
    name: 'follower.replication.throttled.replicas',
    type: 'list',
    default: '',
    ...throttledReplicas(),
    importance: 'medium',
    synonyms: [],
    doc: "A list of replicas for which log replication should be throttled on the follower side. The list should describe a set of replicas in the form [PartitionId]:[BrokerId],[PartitionId]:[BrokerId]:... or alternatively the wildcard '*' can be used to throttle all replicas for this topic.",
  },
  {
    name: 'remote.storage.enable',
    type: 'boolean',
    default: 'false',
    importance: 'medium',
    synonyms: [],
    doc: 'To enable tiered storage for a topic, set this configuration as true. You can not disable this config once it is enabled. It will be provided in future versions.',
  },
  {
    name: 'local.retention.ms',
    type: 'long',
    default: '-2',
    ...atLeast(-2),
    importance: 'medium',
    synonyms: [same('log.local.retention.ms')],
    doc: 'The number of milliseconds to keep the local log segment before it gets deleted. Default value is -2, it represents `retention.ms` value is to be used. The effective value should always be less than or equal to `retention.ms` value.',
  },
  {
    name: 'local.retention.bytes',
    type: 'long',
    default: '-2',
    ...atLeast(-2),
    importance: 'medium',
    synonyms: [same('log.local.retention.bytes')],
    doc: 'The maximum size of local log segments that can grow for a partition before it deletes the old segments. Default value is -2, it represents `retention.bytes` value to be used. The effective value should always be less than or equal to `retention.bytes` value.',
  },
  {
    name: 'remote.log.copy.disable',
    type: 'boolean',
    default: 'false',
    importance: 'medium',
    synonyms: [],
    doc: 'Determines whether tiered data for a topic should become read only, and no more data uploading on a topic. Once this config is set to true, the local retention configuration (i.e. local.retention.ms/bytes) becomes irrelevant, and all data expiration follows the topic-wide retention configuration(i.e. retention.ms/bytes).',
  },
  {
    name: 'remote.log.delete.on.disable',
    type: 'boolean',
    default: 'false',
    importance: 'medium',
    synonyms: [],
    doc: 'Determines whether tiered data for a topic should be deleted after tiered storage is disabled on a topic. This configuration should be enabled when trying to set `remote.storage.enable` from true to false',
  },
  {
    name: 'flush.on.ack',
    type: 'boolean',
    default: 'true',
    importance: 'medium',
    synonyms: [same('log.flush.on.ack')],
    weirOnly: true,
    doc: 'Weir: a key of its own, unknown to Kafka. When true (the default), a produce request with <code>acks=all</code> is acknowledged only after the leader has flushed (fsynced) the appended records, so an acknowledged write survives a crash of the machine. When false, Weir acknowledges as Kafka does and leaves flushing to <code>flush.messages</code>, <code>flush.ms</code> and the operating system.',
  },
])

/** The topic keys by name. */
export const TOPIC_CONFIG_BY_NAME: ReadonlyMap<string, TopicConfigDef> = new Map(
  TOPIC_CONFIGS.map((d) => [d.name, d]),
)

/** The definition of topic key `name`, or undefined when Weir (and Kafka) know no such topic key. */
export function topicConfigDef(name: string): TopicConfigDef | undefined {
  return TOPIC_CONFIG_BY_NAME.get(name)
}

/**
 * The accepted differences between Apache Kafka 4.0 and Weir, as the differential tests see them.
 * Each entry matches a difference by API, optional versions and step (globs with `*`), field path
 * (a glob) and, when given, exactly what each side answered (after the harness's masks: an error
 * message is `'<message>'` or null, a field one side lacks is ABSENT). Each entry's `doc` names its
 * row in docs/compatibility.md ("Differences from Apache Kafka 4.0"); allowances.test.ts checks it.
 * An entry tied to a step whose request ran without its difference fails the test as stale: remove
 * it and its row. An entry without a step accepts a class of differences (an order, a message) that
 * only some requests show, and is never stale.
 */

/** A field, array element or API one side's answer does not have. */
export const ABSENT: unique symbol = Symbol('absent')

export interface Allowance {
  readonly api: string
  /** The field, as the harness prints it: `topics[name=t].partitions[partitionIndex=0].leaderEpoch`. */
  readonly path: string
  readonly step?: string
  readonly versions?: readonly number[]
  readonly kafka?: unknown
  readonly weir?: unknown
  /** The second column of this difference's row in docs/compatibility.md. */
  readonly doc: string
  /** Why the difference is accepted. */
  readonly reason: string
  /** The difference depends on timing: its absence does not make the entry stale. */
  readonly sometimes?: boolean
}

/** The APIs Kafka 4.0 serves and Weir does not (yet), with Kafka's version ranges. */
const NOT_SERVED: readonly [number, string, number, number][] = [
  [17, 'SaslHandshake', 0, 1],
  [34, 'AlterReplicaLogDirs', 1, 2],
  [36, 'SaslAuthenticate', 0, 2],
  [38, 'CreateDelegationToken', 1, 3],
  [39, 'RenewDelegationToken', 1, 2],
  [40, 'ExpireDelegationToken', 1, 2],
  [41, 'DescribeDelegationToken', 1, 3],
  [49, 'AlterClientQuotas', 0, 1],
  [64, 'UnregisterBroker', 0, 0],
  [68, 'ConsumerGroupHeartbeat', 0, 1],
  [69, 'ConsumerGroupDescribe', 0, 1],
  [74, 'ListClientMetricsResources', 0, 0],
  [75, 'DescribeTopicPartitions', 0, 0],
  [80, 'AddRaftVoter', 0, 0],
  [81, 'RemoveRaftVoter', 0, 0],
]

/**
 * Versions Kafka 4.0.0 removed (KIP-896) that Weir serves: [key, name, Kafka's first]. Kafka 4.0.1
 * gave JoinGroup v0-1 back (KAFKA-19444: librdkafka before 2.11 with SASL/GSSAPI joins with them,
 * and so do kafka-go's consumer groups), and Weir's codec is generated from 4.0.2's schemas.
 */
const REMOVED_MIN: readonly [number, string, number][] = [[11, 'JoinGroup', 2]]

/** Features (KIP-584) Kafka 4.0 advertises for what Weir does not implement: [name, max, finalized]. */
const FEATURES: readonly [string, number, number | null][] = [
  ['group.version', 1, 1],
  ['kraft.version', 1, null],
  ['eligible.leader.replicas.version', 1, null],
]

const ORDER_REASON =
  'Kafka lists these in the order of its hash maps; clients key them by name or index, and Weir answers in a fixed order.'

export const allowances: readonly Allowance[] = [
  ...NOT_SERVED.map(
    ([apiKey, name, minVersion, maxVersion]): Allowance => ({
      api: 'ApiVersions',
      step: 'api-versions*',
      path: `apiKeys[apiKey=${apiKey}]`,
      kafka: { apiKey, minVersion, maxVersion },
      weir: ABSENT,
      doc: 'apiKeys: APIs Weir does not serve',
      reason: `${name} is not implemented (yet).`,
    }),
  ),
  ...REMOVED_MIN.map(
    ([apiKey, name, kafka]): Allowance => ({
      api: 'ApiVersions',
      step: 'api-versions*',
      path: `apiKeys[apiKey=${apiKey}].minVersion`,
      kafka,
      weir: 0,
      doc: 'apiKeys[].minVersion',
      reason: `Kafka 4.0.0 removed ${name} below v${kafka} (KIP-896) and 4.0.1 restored them; Weir serves 4.0.2's versions.`,
    }),
  ),
  ...FEATURES.flatMap(([name, max, finalized]): Allowance[] => [
    {
      api: 'ApiVersions',
      step: 'api-versions',
      path: `supportedFeatures[name=${name}]`,
      kafka: { name, minVersion: 0, maxVersion: max },
      weir: ABSENT,
      doc: 'supportedFeatures, finalizedFeatures',
      reason: `Weir does not implement what ${name} gates.`,
    },
    ...(finalized === null
      ? []
      : [
          {
            api: 'ApiVersions',
            step: 'api-versions',
            path: `finalizedFeatures[name=${name}]`,
            kafka: { name, maxVersionLevel: finalized, minVersionLevel: finalized },
            weir: ABSENT,
            doc: 'supportedFeatures, finalizedFeatures',
            reason: `Weir does not implement what ${name} gates.`,
          },
        ]),
  ]),
  {
    api: 'Metadata',
    path: 'topics[name=*].partitions[#order]',
    doc: 'order of partitions',
    reason: ORDER_REASON,
  },
  {
    api: 'ListOffsets',
    path: 'topics[name=*].partitions[#order]',
    doc: 'order of partitions',
    reason: ORDER_REASON,
  },
  {
    api: 'DescribeLogDirs',
    path: 'results[*].topics[name=*].partitions[#order]',
    doc: 'order of partitions',
    reason: ORDER_REASON,
  },
  {
    api: 'DescribeConfigs',
    path: 'results[resourceName=*].configs[#order]',
    doc: 'order of configs',
    reason: ORDER_REASON,
  },
  {
    api: 'DeleteTopics',
    path: 'responses[#order]',
    doc: 'order of topics',
    reason: ORDER_REASON,
  },
  {
    api: 'ListGroups',
    path: 'groups[#order]',
    doc: 'order of groups',
    reason: ORDER_REASON,
  },
  {
    api: 'DescribeAcls',
    path: 'resources[#order]',
    doc: 'order of resources',
    reason: ORDER_REASON,
  },
  {
    api: 'DescribeAcls',
    path: 'resources[resourceName=*].acls[#order]',
    doc: 'order of resources',
    reason: ORDER_REASON,
  },
  {
    api: 'DeleteAcls',
    path: 'filterResults[*].matchingAcls[#order]',
    doc: 'order of matchingAcls',
    reason: ORDER_REASON,
  },
  {
    api: 'AlterUserScramCredentials',
    path: 'results[#order]',
    doc: 'order of results',
    reason: ORDER_REASON,
  },
  {
    api: 'DescribeUserScramCredentials',
    path: 'results[#order]',
    doc: 'order of results',
    reason: ORDER_REASON,
  },
  {
    api: 'DescribeUserScramCredentials',
    path: 'results[user=*].credentialInfos[#order]',
    doc: 'order of credentialInfos',
    reason: ORDER_REASON,
  },
  {
    api: 'CreateTopics',
    path: 'topics[name=*].configs[name=flush.on.ack]',
    kafka: ABSENT,
    doc: 'configs: flush.on.ack',
    reason:
      'A Weir topic config (fsync before acknowledging, durable-before-visible); Kafka has no such key.',
  },
  {
    api: 'DescribeConfigs',
    path: 'results[resourceName=*].configs[name=flush.on.ack]',
    kafka: ABSENT,
    doc: 'configs: flush.on.ack',
    reason:
      'A Weir topic config (fsync before acknowledging, durable-before-visible); Kafka has no such key.',
  },
  {
    api: 'CreateTopics',
    step: 'create-topics/internal',
    path: 'topics[name=__consumer_offsets].*',
    doc: 'creating `__consumer_offsets` by hand',
    reason:
      "Weir's group coordinator creates and owns the topic (its partition count and compaction); a hand-made one could break groups, so only a broker's own request may create it.",
  },
  {
    api: 'Produce',
    path: 'responses[name=*].partitionResponses[*].errorMessage',
    kafka: null,
    weir: '<message>',
    doc: 'partitionResponses[].errorMessage',
    reason:
      'Weir says why it refused the records; Kafka sends a message only for INVALID_TIMESTAMP and INVALID_RECORD found while validating records. Clients show the message or the error name.',
  },
  {
    api: 'Produce',
    step: 'produce/future-timestamp',
    path: 'responses[name=data].partitionResponses[0].recordErrors[0]',
    weir: ABSENT,
    doc: 'partitionResponses[].recordErrors',
    reason:
      "Weir refuses the whole batch as Kafka does (INVALID_TIMESTAMP, with the log start offset and a message) but checks the batch's timestamps without decoding its records, so it does not name the culprit records (KIP-467).",
  },
  {
    api: 'InitProducerId',
    step: 'transactions/init-producer-id',
    path: 'errorCode',
    doc: 'errorCode for a transactional id',
    reason:
      'Both answer NOT_COORDINATOR until the __transaction_state partition of the id is loaded (the FindCoordinator before it creates the topic), then a producer id; which one a side answers depends on how far its creation got.',
    sometimes: true,
  },
  {
    api: 'DescribeProducers',
    path: 'topics[name=*].partitions[partitionIndex=*].errorMessage',
    kafka: null,
    weir: '<message>',
    doc: 'partitions[].errorMessage',
    reason: 'Weir says which partition it does not host; Kafka sends the code alone.',
  },
]

/**
 * Differential: the authorization matrix. Kafka 4.0 and Weir, both with StandardAuthorizer,
 * `allow.everyone.if.no.acl.found=false` and a SASL_PLAINTEXT PLAIN listener, get the same ACLs
 * through CreateAcls; then every principal sends every request of the table to both, and what
 * authorization decides is compared: the error codes per topic, partition, group and resource,
 * which topics, groups and resources a listing names, and the authorized-operations bitfields.
 * A row marked `knownMismatch` prints its differences instead of failing (Weir still wrong there).
 */
import { test } from 'node:test'
import type {
  BrokerId,
  GroupId,
  ProducerId,
  TopicName,
  TransactionalId,
  Uuid,
} from '../../src/model/index.ts'
import { type Api, apis, encodeBatch, type FetchRequestData } from '../../src/protocol/index.ts'
import { Differ, Pair, SIDES, type Side, TEST_PRODUCER_ID_MIN } from './harness.ts'

const PRINCIPALS = ['dave', 'bob', 'alice', 'carol', 'admin'] as const
type Principal = (typeof PRINCIPALS)[number]
const USERS: Record<Principal, string> = {
  admin: 'admin-secret',
  alice: 'alice-secret',
  bob: 'bob-secret',
  carol: 'carol-secret',
  dave: 'dave-secret',
}

// Kafka's codes (acl.ts of src/security).
const TOPIC = 2
const GROUP = 3
const CLUSTER = 4
const TRANSACTIONAL_ID = 5
const ANY = 1
const LITERAL = 3
const PREFIXED = 4
const ALL = 2
const READ = 3
const WRITE = 4
const CREATE = 5
const DELETE = 6
const ALTER = 7
const DESCRIBE = 8
const DESCRIBE_CONFIGS = 10
const ALTER_CONFIGS = 11
const IDEMPOTENT_WRITE = 12
const DENY = 2
const ALLOW = 3
const BROKER_RESOURCE = 4
const TOPIC_RESOURCE = 2
const BROKER_LOGGER_RESOURCE = 8

const acl = (
  principal: Principal | '*',
  resourceType: number,
  resourceName: string,
  resourcePatternType: number,
  operation: number,
  permissionType = ALLOW,
  host = '*',
) => ({
  resourceType,
  resourceName,
  resourcePatternType,
  principal: `User:${principal}`,
  host,
  operation,
  permissionType,
})

/**
 * What each principal may do. dave has no ACL at all; admin is a super user. Prefixed and literal,
 * allow and deny (a DENY wins over a prefixed ALL), a wildcard name, a host that never matches
 * loopback (bob's READ on t-secret) and one that does (carol's cluster DESCRIBE).
 */
const ACLS = [
  acl('alice', TOPIC, 'app-', PREFIXED, ALL),
  acl('alice', TOPIC, 'app-private', LITERAL, ALL, DENY),
  acl('alice', TOPIC, 't-public', LITERAL, READ),
  acl('alice', GROUP, 'alice-', PREFIXED, ALL),
  acl('alice', TRANSACTIONAL_ID, 'alice-tx', LITERAL, WRITE),
  acl('alice', CLUSTER, 'kafka-cluster', LITERAL, DESCRIBE),
  acl('bob', TOPIC, 't-public', LITERAL, WRITE),
  acl('bob', TOPIC, '*', LITERAL, DESCRIBE),
  acl('bob', TOPIC, 't-secret', LITERAL, READ, ALLOW, '10.0.0.1'),
  acl('bob', GROUP, 'shared', LITERAL, READ),
  acl('bob', CLUSTER, 'kafka-cluster', LITERAL, IDEMPOTENT_WRITE),
  acl('bob', TOPIC, 'bob-', PREFIXED, CREATE),
  ...[CREATE, DELETE, ALTER, DESCRIBE_CONFIGS, ALTER_CONFIGS].map((op) =>
    acl('carol', TOPIC, 'carol-', PREFIXED, op),
  ),
  acl('carol', CLUSTER, 'kafka-cluster', LITERAL, ALTER),
  acl('carol', CLUSTER, 'kafka-cluster', LITERAL, DESCRIBE, ALLOW, '127.0.0.1'),
  acl('carol', CLUSTER, 'kafka-cluster', LITERAL, ALTER_CONFIGS, DENY),
  acl('carol', GROUP, '*', LITERAL, DESCRIBE),
]

const TOPICS = [
  't-public',
  't-secret',
  'app-orders',
  'app-private',
  'app-doomed',
  'carol-doomed',
  'carol-grow',
]
/** Groups with committed offsets before the matrix runs. */
const GROUPS = ['alice-g', 'alice-doomed', 'shared', 'secret-g']

const topic = (name: string) => name as TopicName
const group = (name: string) => name as GroupId
/** Record timestamps: ten minutes ago (Kafka refuses more than an hour ahead), the same on both sides. */
const T0 = BigInt(Math.floor(Date.now() / 1000) * 1000 - 600_000)
const batch = (producerId = -1n, producerEpoch = -1, baseSequence = -1) =>
  encodeBatch({
    records: [{ key: null, value: Buffer.from('matrix'), headers: [], timestamp: T0 }],
    producerId,
    producerEpoch,
    baseSequence,
  })

/** What each side assigned during setup: topic ids, and a producer id per principal. */
interface SideState {
  topicIds: Map<string, Uuid>
  producers: Map<Principal, { id: bigint; epoch: number }>
}
const state: Record<Side, SideState> = {
  kafka: { topicIds: new Map(), producers: new Map() },
  weir: { topicIds: new Map(), producers: new Map() },
}

interface Row {
  api: Api<unknown, never, unknown, never>
  /** Names the row in failures: `bob Produce t-public,t-secret`. */
  what: string
  body: (side: Side, principal: Principal) => unknown
  version?: number
  /** Principals this row still differs for: printed, not failed (see the mismatch list). */
  knownMismatch?: readonly Principal[]
}

const row = <ReqIn>(
  api: Api<unknown, ReqIn, unknown, never>,
  what: string,
  body: ReqIn | ((side: Side, principal: Principal) => ReqIn),
  extra: Partial<Pick<Row, 'version' | 'knownMismatch'>> = {},
): Row => ({
  api: api as unknown as Api<unknown, never, unknown, never>,
  what,
  body: typeof body === 'function' ? (body as Row['body']) : () => body,
  ...extra,
})

const partitionsOf = (names: readonly string[]) =>
  names.map((name) => ({ name: topic(name), partitionIndexes: [0] }))

/**
 * The matrix, in the order it runs: reads first, then what changes state (creations, deletions), so
 * that every principal sees the same state on both sides.
 */
/** A consumer's Fetch of partition 0 of each topic, named by name or by id. */
function fetchBody(topics: readonly FetchRequestData.FetchTopicIn[]): FetchRequestData.FetchRequestIn {
  return {
    replicaId: -1 as BrokerId,
    maxWaitMs: 0,
    minBytes: 0,
    maxBytes: 1 << 20,
    isolationLevel: 0,
    sessionId: 0,
    sessionEpoch: -1,
    topics: topics.map((t) => ({
      ...t,
      partitions: [
        {
          partition: 0,
          currentLeaderEpoch: -1,
          fetchOffset: 0n,
          logStartOffset: -1n,
          partitionMaxBytes: 1 << 16,
        },
      ],
    })),
    forgottenTopicsData: [],
    rackId: '',
  }
}

const ROWS: readonly Row[] = [
  row(apis.Metadata, 'all topics', {
    topics: null,
    allowAutoTopicCreation: false,
    includeTopicAuthorizedOperations: true,
  }),
  row(apis.Metadata, 't-public,t-secret,app-orders,app-private,no-such', {
    topics: ['t-public', 't-secret', 'app-orders', 'app-private', 'no-such'].map((n) => ({ name: topic(n) })),
    allowAutoTopicCreation: false,
    includeTopicAuthorizedOperations: true,
  }),
  // Names of each principal's own: an earlier principal's creation is still under way when the next asks.
  row(apis.Metadata, 'auto-create app-auto-*,t-auto-*', (_side, p) => ({
    topics: [{ name: topic(`app-auto-${p}`) }, { name: topic(`t-auto-${p}`) }],
    allowAutoTopicCreation: true,
  })),
  // v10, the last with the cluster's authorized operations in Metadata (KIP-700 moved them).
  row(
    apis.Metadata,
    'v10 t-public,t-secret with cluster operations',
    {
      topics: ['t-public', 't-secret'].map((n) => ({ name: topic(n) })),
      allowAutoTopicCreation: false,
      includeClusterAuthorizedOperations: true,
      includeTopicAuthorizedOperations: true,
    },
    { version: 10 },
  ),
  row(apis.Produce, 't-public,t-secret,app-orders,app-private', () => ({
    transactionalId: null,
    acks: -1,
    timeoutMs: 30_000,
    topicData: ['t-public', 't-secret', 'app-orders', 'app-private'].map((n) => ({
      name: topic(n),
      partitionData: [{ index: 0, records: batch() }],
    })),
  })),
  row(apis.Produce, 'idempotent t-public,app-orders', (side, principal) => {
    const p = state[side].producers.get(principal)
    return {
      transactionalId: null,
      acks: -1,
      timeoutMs: 30_000,
      topicData: ['t-public', 'app-orders'].map((n) => ({
        name: topic(n),
        partitionData: [{ index: 0, records: batch(p?.id ?? -1n, p?.epoch ?? -1, 0) }],
      })),
    }
  }),
  row(apis.Produce, 'transactional alice-tx to app-orders', {
    transactionalId: 'alice-tx' as TransactionalId,
    acks: -1,
    timeoutMs: 30_000,
    topicData: [
      {
        name: topic('app-orders'),
        partitionData: [
          {
            index: 0,
            records: encodeBatch({
              records: [{ key: null, value: Buffer.from('matrix'), headers: [], timestamp: T0 }],
              producerId: TEST_PRODUCER_ID_MIN + 9n,
              producerEpoch: 0,
              baseSequence: 0,
              transactional: true,
            }),
          },
        ],
      },
    ],
  }),
  // Fetch by name, as clients before KIP-516 (v12) do.
  row(
    apis.Fetch,
    't-public,t-secret,app-orders by name',
    fetchBody(['t-public', 't-secret', 'app-orders'].map((n) => ({ topic: topic(n) }))),
    { version: 12 },
  ),
  row(apis.Fetch, 't-public,t-secret,app-orders,app-private by id', (side) =>
    fetchBody(
      ['t-public', 't-secret', 'app-orders', 'app-private'].map((n) => ({
        topicId: state[side].topicIds.get(n) as Uuid,
      })),
    ),
  ),
  row(apis.ListOffsets, 't-public,t-secret,app-private,no-such', {
    replicaId: -1 as BrokerId,
    isolationLevel: 0,
    topics: ['t-public', 't-secret', 'app-private', 'no-such'].map((n) => ({
      name: topic(n),
      partitions: [{ partitionIndex: 0, currentLeaderEpoch: -1, timestamp: -1n }],
    })),
    timeoutMs: 30_000,
  }),
  row(apis.OffsetForLeaderEpoch, 't-public,t-secret,app-orders', {
    replicaId: -1 as BrokerId,
    topics: ['t-public', 't-secret', 'app-orders'].map((n) => ({
      topic: topic(n),
      partitions: [{ partition: 0, leaderEpoch: 0, currentLeaderEpoch: -1 }],
    })),
  }),
  row(apis.DescribeConfigs, 'topics t-public,carol-grow, broker 1', {
    resources: [
      { resourceType: TOPIC_RESOURCE, resourceName: 't-public', configurationKeys: ['retention.ms'] },
      { resourceType: TOPIC_RESOURCE, resourceName: 'carol-grow', configurationKeys: ['retention.ms'] },
      { resourceType: BROKER_RESOURCE, resourceName: '1', configurationKeys: ['log.retention.ms'] },
    ],
    includeSynonyms: false,
    includeDocumentation: false,
  }),
  row(apis.DescribeConfigs, 'broker logger 1', {
    resources: [{ resourceType: BROKER_LOGGER_RESOURCE, resourceName: '1', configurationKeys: ['kafka'] }],
    includeSynonyms: false,
    includeDocumentation: false,
  }),
  row(apis.AlterConfigs, 'validate-only topics t-public,carol-grow, broker 1', {
    resources: [
      {
        resourceType: TOPIC_RESOURCE,
        resourceName: 't-public',
        configs: [{ name: 'retention.ms', value: '100000' }],
      },
      {
        resourceType: TOPIC_RESOURCE,
        resourceName: 'carol-grow',
        configs: [{ name: 'retention.ms', value: '100000' }],
      },
      { resourceType: BROKER_RESOURCE, resourceName: '1', configs: [] },
    ],
    validateOnly: true,
  }),
  row(apis.IncrementalAlterConfigs, 'validate-only topics t-public,carol-grow, broker 1', {
    resources: [
      {
        resourceType: TOPIC_RESOURCE,
        resourceName: 't-public',
        configs: [{ name: 'retention.ms', configOperation: 0, value: '100000' }],
      },
      {
        resourceType: TOPIC_RESOURCE,
        resourceName: 'carol-grow',
        configs: [{ name: 'retention.ms', configOperation: 0, value: '100000' }],
      },
      { resourceType: BROKER_RESOURCE, resourceName: '1', configs: [] },
    ],
    validateOnly: true,
  }),
  row(apis.FindCoordinator, 'groups alice-g,secret-g', {
    keyType: 0,
    coordinatorKeys: ['alice-g', 'secret-g'],
  }),
  row(apis.FindCoordinator, 'transactions alice-tx,other-tx', {
    keyType: 1,
    coordinatorKeys: ['alice-tx', 'other-tx'],
  }),
  ...['alice-g', 'shared'].map((g) =>
    row(apis.JoinGroup, g, {
      groupId: group(g),
      sessionTimeoutMs: 30_000,
      rebalanceTimeoutMs: 30_000,
      memberId: '',
      groupInstanceId: null,
      protocolType: 'consumer',
      protocols: [{ name: 'range', metadata: Buffer.alloc(0) }],
      reason: null,
    }),
  ),
  ...['alice-g', 'shared'].map((g) =>
    row(apis.OffsetCommit, `${g} t-public,t-secret,app-orders`, {
      groupId: group(g),
      generationIdOrMemberEpoch: -1,
      memberId: '',
      groupInstanceId: null,
      retentionTimeMs: -1n,
      topics: ['t-public', 't-secret', 'app-orders'].map((n) => ({
        name: topic(n),
        partitions: [
          { partitionIndex: 0, committedOffset: 0n, committedLeaderEpoch: -1, committedMetadata: null },
        ],
      })),
    }),
  ),
  row(apis.OffsetFetch, 'alice-g all, shared t-public,t-secret, secret-g all', {
    groups: [
      { groupId: group('alice-g'), memberId: null, memberEpoch: -1, topics: null },
      {
        groupId: group('shared'),
        memberId: null,
        memberEpoch: -1,
        topics: partitionsOf(['t-public', 't-secret']),
      },
      { groupId: group('secret-g'), memberId: null, memberEpoch: -1, topics: null },
    ],
    requireStable: false,
  }),
  // The single-group form (v7 and before) and a single coordinator key (v3).
  row(
    apis.OffsetFetch,
    'v7 shared t-public,t-secret',
    { groupId: group('shared'), topics: partitionsOf(['t-public', 't-secret']), requireStable: false },
    { version: 7 },
  ),
  row(apis.FindCoordinator, 'v3 group shared', { key: 'shared', keyType: 0 }, { version: 3 }),
  row(apis.ListGroups, 'all', { statesFilter: [], typesFilter: [] }),
  row(apis.DescribeGroups, 'alice-g,shared,secret-g,no-group', {
    groups: ['alice-g', 'shared', 'secret-g', 'no-group'].map(group),
    includeAuthorizedOperations: true,
  }),
  // A member no group has: the group's READ decides between GROUP_AUTHORIZATION_FAILED and UNKNOWN_MEMBER_ID.
  row(apis.Heartbeat, 'alice-g unknown member', {
    groupId: group('alice-g'),
    generationId: 1,
    memberId: 'm-none',
    groupInstanceId: null,
  }),
  row(apis.SyncGroup, 'alice-g unknown member', {
    groupId: group('alice-g'),
    generationId: 1,
    memberId: 'm-none',
    groupInstanceId: null,
    protocolType: 'consumer',
    protocolName: 'range',
    assignments: [],
  }),
  row(apis.LeaveGroup, 'alice-g unknown member', {
    groupId: group('alice-g'),
    members: [{ memberId: 'm-none', groupInstanceId: null, reason: null }],
  }),
  row(apis.InitProducerId, 'idempotent', {
    transactionalId: null,
    transactionTimeoutMs: 60_000,
    producerId: -1n as ProducerId,
    producerEpoch: -1,
  }),
  row(apis.InitProducerId, 'transactional alice-tx', {
    transactionalId: 'alice-tx' as TransactionalId,
    transactionTimeoutMs: 60_000,
    producerId: -1n as ProducerId,
    producerEpoch: -1,
  }),
  // The transaction coordinator's APIs with a producer id no transaction has: past the ACL checks,
  // INVALID_PRODUCER_ID_MAPPING on both sides.
  row(
    apis.AddPartitionsToTxn,
    'alice-tx: app-orders, t-public (v3)',
    {
      v3AndBelowTransactionalId: 'alice-tx' as TransactionalId,
      v3AndBelowProducerId: -1n as ProducerId,
      v3AndBelowProducerEpoch: -1,
      v3AndBelowTopics: [
        { name: topic('app-orders'), partitions: [0] },
        { name: topic('t-public'), partitions: [0] },
      ],
    },
    { version: 3 },
  ),
  row(apis.AddPartitionsToTxn, "alice-tx verifyOnly (a broker's v4+)", {
    transactions: [
      {
        transactionalId: 'alice-tx' as TransactionalId,
        producerId: -1n as ProducerId,
        producerEpoch: -1,
        verifyOnly: true,
        topics: [{ name: topic('app-orders'), partitions: [0] }],
      },
    ],
  }),
  ...['alice-g', 'shared'].map((g) =>
    row(apis.AddOffsetsToTxn, `alice-tx, group ${g}`, {
      transactionalId: 'alice-tx' as TransactionalId,
      producerId: -1n as ProducerId,
      producerEpoch: -1,
      groupId: group(g),
    }),
  ),
  row(
    apis.EndTxn,
    'alice-tx commit (v4)',
    {
      transactionalId: 'alice-tx' as TransactionalId,
      producerId: -1n as ProducerId,
      producerEpoch: -1,
      committed: true,
    },
    { version: 4 },
  ),
  row(apis.DescribeTransactions, 'other-tx', { transactionalIds: ['other-tx' as TransactionalId] }),
  row(apis.ListTransactions, 'Ongoing', {
    stateFilters: ['Ongoing'],
    producerIdFilters: [],
    durationFilter: -1n,
  }),
  row(apis.DescribeAcls, 'all', {
    resourceTypeFilter: ANY,
    resourceNameFilter: null,
    patternTypeFilter: ANY,
    principalFilter: null,
    hostFilter: null,
    operation: ANY,
    permissionType: ANY,
  }),
  row(apis.DescribeCluster, 'with authorized operations', {
    includeClusterAuthorizedOperations: true,
    endpointType: 1,
    includeFencedBrokers: false,
  }),
  // Denied, Kafka's error response still lists the requested topics (getErrorResponse).
  row(apis.ListPartitionReassignments, 't-public', { timeoutMs: 30_000, topics: partitionsOf(['t-public']) }),
  row(apis.DescribeLogDirs, 't-public,t-secret', {
    topics: ['t-public', 't-secret'].map((n) => ({ topic: topic(n), partitions: [0] })),
  }),
  row(apis.DescribeProducers, 't-public,t-secret,app-orders', {
    topics: partitionsOf(['t-public', 't-secret', 'app-orders']),
  }),
  // Named users: denied with `users: null`, Kafka 4.0 sends no answer at all (its error response
  // iterates the null list). Denied, it answers a result per requested user.
  row(apis.DescribeUserScramCredentials, 'alice,nobody', { users: [{ name: 'alice' }, { name: 'nobody' }] }),
  row(apis.ElectLeaders, 'preferred t-public', {
    electionType: 0,
    topicPartitions: [{ topic: topic('t-public'), partitions: [0] }],
    timeoutMs: 30_000,
  }),
  row(apis.AlterPartitionReassignments, 'cancel t-public 0', {
    timeoutMs: 30_000,
    topics: [{ name: topic('t-public'), partitions: [{ partitionIndex: 0, replicas: null }] }],
  }),
  row(apis.CreateTopics, 'validate-only carol-v,app-v,t-v,bob-v', {
    topics: ['carol-v', 'app-v', 't-v', 'bob-v'].map((n) => ({
      name: topic(n),
      numPartitions: 1,
      replicationFactor: 1,
      assignments: [],
      configs: [],
    })),
    timeoutMs: 30_000,
    validateOnly: true,
  }),
  row(apis.CreateTopics, 'carol-made,app-made,t-made,bob-made', {
    topics: ['carol-made', 'app-made', 't-made', 'bob-made'].map((n) => ({
      name: topic(n),
      numPartitions: 1,
      replicationFactor: 1,
      assignments: [],
      configs: [],
    })),
    timeoutMs: 30_000,
    validateOnly: false,
  }),
  row(apis.CreatePartitions, 'carol-grow,app-orders to 2', {
    topics: ['carol-grow', 'app-orders'].map((n) => ({ name: topic(n), count: 2, assignments: null })),
    timeoutMs: 30_000,
    validateOnly: false,
  }),
  row(apis.DeleteRecords, 't-public,app-orders,t-secret before 0', {
    topics: ['t-public', 'app-orders', 't-secret'].map((n) => ({
      name: topic(n),
      partitions: [{ partitionIndex: 0, offset: 0n }],
    })),
    timeoutMs: 30_000,
  }),
  row(apis.AlterUserScramCredentials, 'delete a credential nobody has', {
    deletions: [{ name: 'nobody', mechanism: 1 }],
    upsertions: [],
  }),
  row(apis.CreateAcls, 'topic probe for User:nobody', {
    creations: [acl('nobody' as Principal, TOPIC, 'probe', LITERAL, READ)],
  }),
  row(apis.DeleteAcls, 'User:nobody', {
    filters: [
      {
        resourceTypeFilter: ANY,
        resourceNameFilter: null,
        patternTypeFilter: ANY,
        principalFilter: 'User:nobody',
        hostFilter: null,
        operation: ANY,
        permissionType: ANY,
      },
    ],
  }),
  row(apis.OffsetDelete, 'alice-doomed t-public,t-secret', {
    groupId: group('alice-doomed'),
    topics: ['t-public', 't-secret'].map((n) => ({ name: topic(n), partitions: [{ partitionIndex: 0 }] })),
  }),
  row(apis.DeleteGroups, 'alice-doomed,secret-g', { groupsNames: ['alice-doomed', 'secret-g'].map(group) }),
  // By name in topics[] (v6): a denial names the topic; an unknown one bob may DESCRIBE is
  // UNKNOWN_TOPIC_OR_PARTITION (ControllerApis.deleteTopics).
  row(apis.DeleteTopics, 'app-doomed,carol-doomed,t-none', {
    topics: ['app-doomed', 'carol-doomed', 't-none'].map((n) => ({ name: topic(n) })),
    timeoutMs: 30_000,
  }),
]

/** Array elements are keyed by the first of these they carry (else by position). */
const KEYS = [
  'name',
  'topic',
  'topicName',
  'resourceName',
  'groupId',
  'key',
  'user',
  'partitionIndex',
  'partition',
  'index',
]

/**
 * What authorization decides in a decoded response: every error code and authorized-operations
 * field, and every element of a listing, keyed by its name (or index, or position), so that a
 * topic one side leaves out shows as absent: `topics.t-secret.errorCode`.
 */
export function decisions(value: unknown, topicNames: ReadonlyMap<string, string>): unknown {
  if (Array.isArray(value)) {
    const out: Record<string, unknown> = {}
    value.forEach((x, i) => {
      if (!isRecord(x)) return
      // Fetch names topics by id in its answers (its name ''): those go by the id's name.
      const named = KEYS.map((k) => x[k]).find(
        (v) => (typeof v === 'string' && v !== '') || typeof v === 'number',
      )
      const id = named ?? (typeof x.topicId === 'string' ? topicNames.get(x.topicId) : undefined)
      out[String(id ?? i)] = decisions(x, topicNames)
    })
    return out
  }
  if (!isRecord(value) || Buffer.isBuffer(value)) return {}
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(value)) {
    // Config entries are not decisions: the resource's error code is.
    if (k === 'configs') continue
    if (typeof v === 'number' && /errorCode$|AuthorizedOperations$/i.test(k)) out[k] = v
    else if (Array.isArray(v) || (isRecord(v) && !Buffer.isBuffer(v))) {
      const inner = decisions(v, topicNames) as Record<string, unknown>
      if (Object.keys(inner).length > 0) out[k] = inner
    }
  }
  return out
}

function isRecord(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x)
}

async function waitFor<T>(what: string, ask: () => Promise<T>, ok: (r: T) => boolean): Promise<T> {
  const deadline = performance.now() + 20_000
  for (;;) {
    const r = await ask()
    if (ok(r)) return r
    if (performance.now() > deadline) throw new Error(`${what}: ${JSON.stringify(decisions(r, new Map()))}`)
    await new Promise((done) => setTimeout(done, 100))
  }
}

test('authorization matrix: every principal x API, Kafka 4.0 against Weir', {
  timeout: 240_000,
}, async (t) => {
  const pair = await Pair.start(
    'authorization-matrix',
    {
      'authorizer.class.name': 'org.apache.kafka.metadata.authorizer.StandardAuthorizer',
      'allow.everyone.if.no.acl.found': 'false',
      // ANONYMOUS: the PLAINTEXT listener, where the setup waits, and Kafka's broker talking to its
      // own controller.
      'super.users': 'User:admin;User:ANONYMOUS',
    },
    { saslUsers: USERS },
  )
  try {
    const logins = new Map<Principal, Awaited<ReturnType<Pair['login']>>>()
    for (const p of PRINCIPALS) logins.set(p, await pair.login(p))
    const admin = logins.get('admin')!

    // Setup, as admin: topics, ACLs, a record in each topic, offsets of the groups, producer ids.
    for (const side of SIDES) {
      const c = admin[side]
      const created = await c.request(apis.CreateTopics, c.versionFor(apis.CreateTopics)!, {
        topics: TOPICS.map((n) => ({
          name: topic(n),
          numPartitions: 1,
          replicationFactor: 1,
          assignments: [],
          configs: [],
        })),
        timeoutMs: 30_000,
        validateOnly: false,
      })
      const bad = created.topics.filter((x) => x.errorCode !== 0)
      if (bad.length > 0)
        throw new Error(`${side}: CreateTopics: ${JSON.stringify(decisions(created, new Map()))}`)
      const acls = await c.request(apis.CreateAcls, c.versionFor(apis.CreateAcls)!, { creations: ACLS })
      if (acls.results.some((r) => r.errorCode !== 0))
        throw new Error(`${side}: CreateAcls: ${JSON.stringify(acls)}`)
    }
    for (const n of TOPICS) await pair.waitForTopic(n, 1)
    for (const side of SIDES) {
      const c = admin[side]
      // The authorizer answers DescribeAcls from what it enforces: once every ACL is listed, it has them.
      await waitFor(
        `${side}: ACLs not all listed`,
        () =>
          c.request(apis.DescribeAcls, c.versionFor(apis.DescribeAcls)!, {
            resourceTypeFilter: ANY,
            resourceNameFilter: null,
            patternTypeFilter: ANY,
            principalFilter: null,
            hostFilter: null,
            operation: ANY,
            permissionType: ANY,
          }),
        (r) => r.resources.reduce((n, x) => n + x.acls.length, 0) === ACLS.length,
      )
      const meta = await c.request(apis.Metadata, c.versionFor(apis.Metadata)!, {
        topics: TOPICS.map((n) => ({ name: topic(n) })),
        allowAutoTopicCreation: false,
      })
      for (const x of meta.topics) state[side].topicIds.set(x.name ?? '', x.topicId)
      await c.request(apis.Produce, c.versionFor(apis.Produce)!, {
        transactionalId: null,
        acks: -1,
        timeoutMs: 30_000,
        topicData: TOPICS.map((n) => ({ name: topic(n), partitionData: [{ index: 0, records: batch() }] })),
      })
      // FindCoordinator creates the offsets topic; commits are NOT_COORDINATOR until it is led.
      await waitFor(
        `${side}: FindCoordinator`,
        () =>
          c.request(apis.FindCoordinator, c.versionFor(apis.FindCoordinator)!, {
            keyType: 0,
            coordinatorKeys: GROUPS,
          }),
        (r) => r.coordinators.every((x) => x.errorCode === 0),
      )
      // The same for __transaction_state: the rows meet a loaded transaction coordinator.
      await waitFor(
        `${side}: FindCoordinator (transaction)`,
        () =>
          c.request(apis.FindCoordinator, c.versionFor(apis.FindCoordinator)!, {
            keyType: 1,
            coordinatorKeys: ['alice-tx', 'other-tx'],
          }),
        (r) => r.coordinators.every((x) => x.errorCode === 0),
      )
      for (const g of GROUPS) {
        await waitFor(
          `${side}: OffsetCommit ${g}`,
          () =>
            c.request(apis.OffsetCommit, c.versionFor(apis.OffsetCommit)!, {
              groupId: group(g),
              generationIdOrMemberEpoch: -1,
              memberId: '',
              groupInstanceId: null,
              retentionTimeMs: -1n,
              topics: [
                {
                  name: topic('t-secret'),
                  partitions: [
                    {
                      partitionIndex: 0,
                      committedOffset: 1n,
                      committedLeaderEpoch: -1,
                      committedMetadata: null,
                    },
                  ],
                },
              ],
            }),
          (r) => r.topics.every((x) => x.partitions.every((p) => p.errorCode === 0)),
        )
      }
      for (const p of PRINCIPALS) {
        const init = await waitFor(
          `${side}: InitProducerId`,
          () =>
            c.request(apis.InitProducerId, c.versionFor(apis.InitProducerId)!, {
              transactionalId: null,
              transactionTimeoutMs: 60_000,
              producerId: -1n as ProducerId,
              producerEpoch: -1,
            }),
          (r) => r.errorCode === 0,
        )
        state[side].producers.set(p, { id: init.producerId, epoch: init.producerEpoch })
      }
    }

    // The matrix: every row for every principal, Kafka first, then Weir.
    const topicNames: Record<Side, Map<string, string>> = {
      kafka: new Map([...state.kafka.topicIds].map(([name, id]) => [id, name])),
      weir: new Map([...state.weir.topicIds].map(([name, id]) => [id, name])),
    }
    const differ = pair.differ
    const known = new Differ()
    differ.begin()
    const fixed: string[] = []
    for (const r of ROWS) {
      const version = r.version ?? pair.version(r.api)
      for (const p of PRINCIPALS) {
        const step = `${p} ${r.api.name} ${r.what}`
        const answers: Record<Side, unknown> = { kafka: undefined, weir: undefined }
        let closed = false
        for (const side of SIDES) {
          const c = logins.get(p)![side]
          // A broker that never answers (Kafka 4.0 on some denials) costs 10 s, not the 30 s default.
          answers[side] = await c
            .request(r.api, version, r.body(side, p) as never, { timeoutMs: 10_000 })
            .then(
              (res) => decisions(res, topicNames[side]),
              (e: Error) => {
                closed = true
                return { answer: e.name }
              },
            )
        }
        // A connection the broker closed is opened again for the rows after.
        if (closed) logins.set(p, await pair.login(p))
        const isKnown = r.knownMismatch?.includes(p) === true
        const target = isKnown ? known : differ
        const before = target.differences.length
        target.compare(step, r.api.name, version, answers.kafka, answers.weir)
        if (isKnown && target.differences.length === before) fixed.push(step)
      }
    }
    for (const line of known.differenceLines()) t.diagnostic(`known mismatch: ${line}`)
    for (const step of fixed) t.diagnostic(`known mismatch no longer differs (drop it from the row): ${step}`)
    differ.check()
  } finally {
    await pair.stop()
  }
})

/**
 * ACLs enforced by every handler, over real sockets: one node in this process with a PLAINTEXT
 * listener (User:ANONYMOUS, a super user: the admin) and a SASL_PLAINTEXT one where alice and bob
 * log in with PLAIN. ACLs are created through CreateAcls; each API is then allowed and denied with
 * Kafka's error. And a 3-node cluster where an ACL created before and one after a controller
 * failover govern every broker.
 */
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import kafkajs from 'kafkajs'
import { WeirNode } from '../../src/broker/index.ts'
import type { KafkaConnection } from '../../src/client/index.ts'
import { partitionForGroup } from '../../src/coordinator/index.ts'
import { type EmbeddedCluster, startCluster } from '../../src/index.ts'
import type { BrokerId, ProducerId, TopicName, TransactionalId } from '../../src/model/index.ts'
import {
  type Api,
  apis,
  decodeResponse,
  ErrorCode,
  encodeBatch,
  encodeRequest,
} from '../../src/protocol/index.ts'
import {
  AclOperation,
  AUTHORIZED_OPERATIONS_OMITTED,
  from32BitField,
  ResourceType,
} from '../../src/security/index.ts'
import { freePorts } from '../../tools/free-ports.ts'
import { openConnection } from '../support/connection.ts'

const { Kafka, logLevel } = kafkajs
const HOST = '127.0.0.1'
const USERS = { alice: 'alice-pw-3c1d', bob: 'bob-pw-8e2a' }
const { Allow, Deny } = { Allow: 3, Deny: 2 }
const LITERAL = 3
const PREFIXED = 4

interface Acl {
  readonly resourceType: number
  readonly resourceName: string
  readonly operation: number
  readonly principal?: string
  readonly permissionType?: number
  readonly patternType?: number
  readonly host?: string
}

async function createAcls(c: KafkaConnection, acls: readonly Acl[]): Promise<void> {
  const res = await c.request(apis.CreateAcls, 3, {
    creations: acls.map((a) => ({
      resourceType: a.resourceType,
      resourceName: a.resourceName,
      resourcePatternType: a.patternType ?? LITERAL,
      principal: a.principal ?? 'User:alice',
      host: a.host ?? '*',
      operation: a.operation,
      permissionType: a.permissionType ?? Allow,
    })),
  })
  assert.deepEqual(
    res.results.map((r) => r.errorCode),
    acls.map(() => ErrorCode.None),
  )
}

/** Retries `check` until it passes: ACLs reach each broker's authorizer once its image has them. */
async function eventually(check: () => Promise<void>): Promise<void> {
  const deadline = Date.now() + 20_000
  for (;;) {
    try {
      return await check()
    } catch (e) {
      if (Date.now() > deadline) throw e
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
}

/** One request over a raw socket bound to `localAddress` (127.0.0.2: another host to the ACLs); its response body. */
async function requestFrom<Res, ReqIn>(
  localAddress: string,
  port: number,
  api: Api<unknown, ReqIn, Res, never>,
  version: number,
  body: ReqIn,
): Promise<Res> {
  const socket = connect({ host: HOST, port, localAddress })
  try {
    await once(socket, 'connect')
    socket.write(
      Buffer.concat(
        encodeRequest(api, { requestApiVersion: version, correlationId: 7, clientId: 'authz-raw' }, body),
      ),
    )
    let got = Buffer.alloc(0)
    for await (const chunk of socket) {
      got = Buffer.concat([got, chunk as Buffer])
      if (got.length >= 4 && got.length >= 4 + got.readInt32BE(0)) break
    }
    return decodeResponse(api, version, got.subarray(4, 4 + got.readInt32BE(0))).body
  } finally {
    socket.destroy()
  }
}

function records(value: string, options: { transactional?: boolean } = {}): Buffer {
  return encodeBatch({
    records: [{ key: null, value: Buffer.from(value), timestamp: 1_700_000_000_000n, headers: [] }],
    ...(options.transactional
      ? { producerId: 7n, producerEpoch: 0, baseSequence: 0, transactional: true }
      : {}),
  })
}

function produce(
  c: KafkaConnection,
  topic: string,
  options: { transactionalId?: string | null; transactional?: boolean } = {},
) {
  return c.request(apis.Produce, 11, {
    transactionalId: (options.transactionalId ?? null) as TransactionalId | null,
    acks: -1,
    timeoutMs: 10_000,
    topicData: [{ name: topic as TopicName, partitionData: [{ index: 0, records: records('v', options) }] }],
  })
}

function fetch(c: KafkaConnection, topics: readonly string[]) {
  return c.request(apis.Fetch, 12, {
    replicaId: -1 as BrokerId,
    maxWaitMs: 0,
    minBytes: 0,
    maxBytes: 1 << 20,
    isolationLevel: 0,
    sessionId: 0,
    sessionEpoch: -1,
    topics: topics.map((topic) => ({
      topic: topic as TopicName,
      partitions: [
        {
          partition: 0,
          currentLeaderEpoch: -1,
          fetchOffset: 0n,
          lastFetchedEpoch: -1,
          logStartOffset: -1n,
          partitionMaxBytes: 1 << 20,
        },
      ],
    })),
    forgottenTopicsData: [],
    rackId: '',
  })
}

const metadata = (
  c: KafkaConnection,
  topics: readonly string[] | null,
  extra: { ops?: boolean; autoCreate?: boolean } = {},
) =>
  c.request(apis.Metadata, 12, {
    topics: topics === null ? null : topics.map((name) => ({ name: name as TopicName })),
    allowAutoTopicCreation: extra.autoCreate ?? false,
    includeTopicAuthorizedOperations: extra.ops ?? false,
  })

describe('ACLs in every handler, one node', () => {
  let dir: string
  let node: WeirNode
  let ports: { plain: number; sasl: number; controller: number }
  let admin: KafkaConnection
  const open: KafkaConnection[] = []

  async function login(user: keyof typeof USERS): Promise<KafkaConnection> {
    const c = await openConnection({ host: HOST, port: ports.sasl }, `authz-${user}`)
    open.push(c)
    const hs = await c.request(apis.SaslHandshake, 1, { mechanism: 'PLAIN' })
    assert.equal(hs.errorCode, ErrorCode.None)
    const auth = await c.request(apis.SaslAuthenticate, 2, {
      authBytes: Buffer.from(`\u0000${user}\u0000${USERS[user]}`),
    })
    assert.equal(auth.errorCode, ErrorCode.None)
    return c
  }

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'weir-authz-'))
    const [plain, sasl, controller] = (await freePorts(3)) as [number, number, number]
    ports = { plain, sasl, controller }
    node = await WeirNode.start({
      staticConfig: new Map([
        ['node.id', '1'],
        ['process.roles', 'broker,controller'],
        ['controller.listener.names', 'CONTROLLER'],
        ['controller.quorum.voters', `1@${HOST}:${controller}`],
        [
          'listeners',
          `PLAINTEXT://${HOST}:${plain},SASL_PLAINTEXT://${HOST}:${sasl},CONTROLLER://${HOST}:${controller}`,
        ],
        [
          'listener.security.protocol.map',
          'PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT',
        ],
        ['inter.broker.listener.name', 'PLAINTEXT'],
        ['sasl.enabled.mechanisms', 'PLAIN'],
        [
          'listener.name.sasl_plaintext.plain.sasl.jaas.config',
          `org.apache.kafka.common.security.plain.PlainLoginModule required ${Object.entries(USERS)
            .map(([u, p]) => `user_${u}="${p}"`)
            .join(' ')};`,
        ],
        ['authorizer.class.name', 'org.apache.kafka.metadata.authorizer.StandardAuthorizer'],
        ['super.users', 'User:ANONYMOUS'],
        ['auto.create.topics.enable', 'true'],
        ['offsets.topic.replication.factor', '1'],
        ['group.initial.rebalance.delay.ms', '0'],
        // Transactional writes of producer ids no coordinator knows: KIP-890 would refuse them.
        ['transaction.partition.verification.enable', 'false'],
        ['log.dirs', dir],
      ]),
    })
    await node.ready()
    admin = await openConnection({ host: HOST, port: plain }, 'authz-admin')
    open.push(admin)
    const created = await admin.request(apis.CreateTopics, 7, {
      topics: ['open', 'secret', 'app-a', 'app-b'].map((name) => ({
        name: name as TopicName,
        numPartitions: 1,
        replicationFactor: 1,
        assignments: [],
        configs: [],
      })),
      timeoutMs: 10_000,
      validateOnly: false,
    })
    assert.deepEqual(
      created.topics.map((t) => t.errorCode),
      [0, 0, 0, 0],
    )
  })

  after(async () => {
    for (const c of open) c.close()
    await node?.stop()
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  })

  test("without ACLs a user may do nothing: Produce, Fetch, Metadata, InitProducerId, CreateTopics answer Kafka's errors", async () => {
    const bob = await login('bob')
    const p = await produce(bob, 'open')
    assert.equal(p.responses[0]!.partitionResponses[0]!.errorCode, ErrorCode.TopicAuthorizationFailed)
    const f = await fetch(bob, ['open'])
    assert.equal(f.responses[0]!.partitions[0]!.errorCode, ErrorCode.TopicAuthorizationFailed)
    assert.deepEqual((await metadata(bob, null)).topics, [])
    const named = await metadata(bob, ['open', 'missing'])
    assert.deepEqual(
      named.topics.map((t) => [t.name, t.errorCode, t.partitions.length]),
      [
        ['open', ErrorCode.TopicAuthorizationFailed, 0],
        ['missing', ErrorCode.TopicAuthorizationFailed, 0],
      ],
    )
    const pid = await bob.request(apis.InitProducerId, 4, {
      transactionalId: null,
      transactionTimeoutMs: 60_000,
      producerId: -1n as ProducerId,
      producerEpoch: -1,
    })
    assert.equal(pid.errorCode, ErrorCode.ClusterAuthorizationFailed)
    const ct = await bob.request(apis.CreateTopics, 7, {
      topics: [
        { name: 'bobs' as TopicName, numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] },
      ],
      timeoutMs: 10_000,
      validateOnly: false,
    })
    assert.deepEqual(
      ct.topics.map((t) => [t.name, t.errorCode]),
      [['bobs', ErrorCode.TopicAuthorizationFailed]],
    )
  })

  test('WRITE, READ and DESCRIBE on a topic, PREFIXED: the data path and Metadata follow them, per topic', async () => {
    await createAcls(admin, [
      { resourceType: ResourceType.Topic, resourceName: 'open', operation: AclOperation.Write },
      { resourceType: ResourceType.Topic, resourceName: 'open', operation: AclOperation.Read },
      {
        resourceType: ResourceType.Topic,
        resourceName: 'app-',
        operation: AclOperation.Describe,
        patternType: PREFIXED,
      },
      {
        resourceType: ResourceType.Topic,
        resourceName: 'app-b',
        operation: AclOperation.Describe,
        permissionType: Deny,
      },
    ])
    const alice = await login('alice')
    await eventually(async () => {
      const p = await produce(alice, 'open')
      assert.equal(p.responses[0]!.partitionResponses[0]!.errorCode, ErrorCode.None)
    })
    const denied = await produce(alice, 'secret')
    assert.equal(denied.responses[0]!.partitionResponses[0]!.errorCode, ErrorCode.TopicAuthorizationFailed)
    const f = await fetch(alice, ['open', 'secret'])
    assert.deepEqual(
      f.responses.map((t) => [t.topic, t.partitions[0]!.errorCode]),
      [
        ['open', ErrorCode.None],
        ['secret', ErrorCode.TopicAuthorizationFailed],
      ],
    )
    assert.equal(f.responses[0]!.partitions[0]!.highWatermark, 1n)
    // Every topic: only those alice may describe (WRITE and READ imply DESCRIBE), no error for the others.
    const all = await metadata(alice, null, { ops: true })
    assert.deepEqual(
      all.topics.map((t) => [t.name, t.errorCode]),
      [
        ['app-a', ErrorCode.None],
        ['open', ErrorCode.None],
      ],
    )
    const openOps = all.topics.find((t) => t.name === 'open')!.topicAuthorizedOperations
    assert.deepEqual(
      from32BitField(openOps).sort(),
      [AclOperation.Read, AclOperation.Write, AclOperation.Describe].sort(),
    )
    assert.deepEqual(from32BitField(all.topics[0]!.topicAuthorizedOperations), [AclOperation.Describe])
    const named = await metadata(alice, ['app-b', 'open'])
    assert.deepEqual(
      named.topics.map((t) => [t.name, t.errorCode, t.topicAuthorizedOperations]),
      [
        ['open', ErrorCode.None, AUTHORIZED_OPERATIONS_OMITTED],
        ['app-b', ErrorCode.TopicAuthorizationFailed, AUTHORIZED_OPERATIONS_OMITTED],
      ],
    )
    const lo = await alice.request(apis.ListOffsets, 7, {
      replicaId: -1 as BrokerId,
      isolationLevel: 0,
      topics: ['open', 'secret'].map((name) => ({
        name: name as TopicName,
        partitions: [{ partitionIndex: 0, currentLeaderEpoch: -1, timestamp: -1n }],
      })),
    })
    assert.deepEqual(
      lo.topics.map((t) => [t.name, t.partitions[0]!.errorCode, t.partitions[0]!.offset]),
      [
        ['open', ErrorCode.None, 1n],
        ['secret', ErrorCode.TopicAuthorizationFailed, -1n],
      ],
    )
    // WRITE on some topic is enough for an idempotent producer (Kafka's rule).
    const pid = await alice.request(apis.InitProducerId, 4, {
      transactionalId: null,
      transactionTimeoutMs: 60_000,
      producerId: -1n as ProducerId,
      producerEpoch: -1,
    })
    assert.equal(pid.errorCode, ErrorCode.None)
    // Transactional records need WRITE on the transactional id: the whole request is refused.
    const txn = await produce(alice, 'open', { transactionalId: 'tx-1', transactional: true })
    assert.equal(
      txn.responses[0]!.partitionResponses[0]!.errorCode,
      ErrorCode.TransactionalIdAuthorizationFailed,
    )
  })

  test('topic admin: CREATE on the topic (and auto-creation), DELETE, ALTER; cluster operations', async () => {
    await createAcls(admin, [
      {
        resourceType: ResourceType.Topic,
        resourceName: 'mine-',
        operation: AclOperation.Create,
        patternType: PREFIXED,
      },
      {
        resourceType: ResourceType.Topic,
        resourceName: 'mine-',
        operation: AclOperation.Delete,
        patternType: PREFIXED,
      },
      { resourceType: ResourceType.Cluster, resourceName: 'kafka-cluster', operation: AclOperation.Describe },
    ])
    const alice = await login('alice')
    const spec = (name: string) => ({
      name: name as TopicName,
      numPartitions: 1,
      replicationFactor: 1,
      assignments: [],
      configs: [],
    })
    await eventually(async () => {
      const ct = await alice.request(apis.CreateTopics, 7, {
        topics: [spec('mine-1'), spec('other-1')],
        timeoutMs: 10_000,
        validateOnly: true,
      })
      assert.deepEqual(
        ct.topics.map((t) => [t.name, t.errorCode]),
        [
          ['mine-1', ErrorCode.None],
          ['other-1', ErrorCode.TopicAuthorizationFailed],
        ],
      )
    })
    const ct = await alice.request(apis.CreateTopics, 7, {
      topics: [spec('mine-1')],
      timeoutMs: 10_000,
      validateOnly: false,
    })
    assert.equal(ct.topics[0]!.errorCode, ErrorCode.None)
    // Configs of the answer need DESCRIBE_CONFIGS, which alice lacks.
    assert.equal(ct.topics[0]!.topicConfigErrorCode, ErrorCode.TopicAuthorizationFailed)
    const auto = await metadata(alice, ['mine-auto', 'other-auto'], { autoCreate: true })
    assert.deepEqual(
      auto.topics.map((t) => [t.name, t.errorCode]),
      [
        ['mine-auto', ErrorCode.UnknownTopicOrPartition],
        ['other-auto', ErrorCode.TopicAuthorizationFailed],
      ],
    )
    const cp = await alice.request(apis.CreatePartitions, 3, {
      topics: [{ name: 'mine-1' as TopicName, count: 2, assignments: null }],
      timeoutMs: 10_000,
      validateOnly: false,
    })
    assert.deepEqual(
      cp.results.map((r) => [r.name, r.errorCode]),
      [['mine-1', ErrorCode.TopicAuthorizationFailed]],
    )
    const dt = await alice.request(apis.DeleteTopics, 6, {
      topics: [
        { name: 'mine-1' as TopicName, topicId: undefined as never },
        { name: 'open' as TopicName, topicId: undefined as never },
      ],
      topicNames: [],
      timeoutMs: 10_000,
    })
    assert.deepEqual(dt.responses.map((r) => [r.name, r.errorCode]).sort(), [
      ['mine-1', ErrorCode.None],
      ['open', ErrorCode.TopicAuthorizationFailed],
    ])
    // A missing topic alice may describe (prefix app-) is unknown, not denied; bob's denial names the topic.
    const missing = await alice.request(apis.DeleteTopics, 6, {
      topics: [{ name: 'app-none' as TopicName, topicId: undefined as never }],
      topicNames: [],
      timeoutMs: 10_000,
    })
    assert.deepEqual(
      missing.responses.map((r) => [r.name, r.errorCode]),
      [['app-none', ErrorCode.UnknownTopicOrPartition]],
    )
    const byBob = await (await login('bob')).request(apis.DeleteTopics, 6, {
      topics: [{ name: 'open' as TopicName, topicId: undefined as never }],
      topicNames: [],
      timeoutMs: 10_000,
    })
    assert.deepEqual(
      byBob.responses.map((r) => [r.name, r.errorCode]),
      [['open', ErrorCode.TopicAuthorizationFailed]],
    )
    const dc = await alice.request(apis.DescribeCluster, 1, {
      includeClusterAuthorizedOperations: true,
      endpointType: 1,
    })
    assert.deepEqual(from32BitField(dc.clusterAuthorizedOperations), [AclOperation.Describe])
    const bob = await login('bob')
    const dcBob = await bob.request(apis.DescribeCluster, 1, {
      includeClusterAuthorizedOperations: true,
      endpointType: 1,
    })
    assert.equal(dcBob.clusterAuthorizedOperations, 0)
    const dcOmitted = await bob.request(apis.DescribeCluster, 1, {
      includeClusterAuthorizedOperations: false,
      endpointType: 1,
    })
    assert.equal(dcOmitted.clusterAuthorizedOperations, AUTHORIZED_OPERATIONS_OMITTED)
  })

  test('groups: READ on the group for the classic protocol and commits, DESCRIBE to find, list and describe, DELETE to delete', async () => {
    await createAcls(admin, [
      { resourceType: ResourceType.Group, resourceName: 'g1', operation: AclOperation.Read },
    ])
    const alice = await login('alice')
    const bob = await login('bob')
    const find = (c: KafkaConnection) =>
      c.request(apis.FindCoordinator, 4, { keyType: 0, coordinatorKeys: ['g1'] })
    await eventually(async () => {
      assert.equal((await find(alice)).coordinators[0]!.errorCode, ErrorCode.None)
    })
    assert.equal((await find(bob)).coordinators[0]!.errorCode, ErrorCode.GroupAuthorizationFailed)
    const join = await bob.request(apis.JoinGroup, 7, {
      groupId: 'g1' as never,
      sessionTimeoutMs: 10_000,
      rebalanceTimeoutMs: 10_000,
      memberId: '',
      groupInstanceId: null,
      protocolType: 'consumer',
      protocols: [{ name: 'range', metadata: Buffer.alloc(0) }],
    })
    assert.equal(join.errorCode, ErrorCode.GroupAuthorizationFailed)
    const commit = await alice.request(apis.OffsetCommit, 8, {
      groupId: 'g1' as never,
      generationIdOrMemberEpoch: -1,
      memberId: '',
      groupInstanceId: null,
      topics: ['open', 'secret'].map((name) => ({
        name: name as TopicName,
        partitions: [
          { partitionIndex: 0, committedOffset: 1n, committedLeaderEpoch: -1, committedMetadata: '' },
        ],
      })),
    })
    assert.deepEqual(
      commit.topics.map((t) => [t.name, t.partitions[0]!.errorCode]),
      [
        ['open', ErrorCode.None],
        ['secret', ErrorCode.TopicAuthorizationFailed],
      ],
    )
    const fetched = await alice.request(apis.OffsetFetch, 8, {
      groups: [
        { groupId: 'g1' as never, topics: null },
        { groupId: 'g2' as never, topics: null },
      ],
      requireStable: false,
    })
    assert.deepEqual(
      fetched.groups.map((g) => [g.groupId, g.errorCode, g.topics.map((t) => t.name)]),
      [
        ['g1', ErrorCode.None, ['open']],
        ['g2', ErrorCode.GroupAuthorizationFailed, []],
      ],
    )
    const listed = async (c: KafkaConnection) =>
      (await c.request(apis.ListGroups, 4, { statesFilter: [] })).groups.map((g) => g.groupId)
    assert.deepEqual(await listed(alice), ['g1'])
    assert.deepEqual(await listed(bob), [])
    const described = await alice.request(apis.DescribeGroups, 5, {
      groups: ['g1', 'g2'] as never[],
      includeAuthorizedOperations: true,
    })
    assert.deepEqual(
      described.groups.map((g) => [g.groupId, g.errorCode]),
      [
        ['g2', ErrorCode.GroupAuthorizationFailed],
        ['g1', ErrorCode.None],
      ],
    )
    assert.deepEqual(
      from32BitField(described.groups[1]!.authorizedOperations).sort(),
      [AclOperation.Read, AclOperation.Describe].sort(),
    )
    const deleted = await alice.request(apis.DeleteGroups, 2, { groupsNames: ['g1'] as never[] })
    assert.deepEqual(
      deleted.results.map((r) => [r.groupId, r.errorCode]),
      [['g1', ErrorCode.GroupAuthorizationFailed]],
    )
  })

  /** A TxnOffsetCommit v3 of offset 7 on partition 0 of each topic, as producer 9000 epoch 0. */
  const txnCommit = (c: KafkaConnection, transactionalId: string, groupId: string, topics: string[]) =>
    c.request(apis.TxnOffsetCommit, 3, {
      transactionalId: transactionalId as TransactionalId,
      groupId: groupId as never,
      producerId: 9000n as ProducerId,
      producerEpoch: 0,
      generationId: -1,
      memberId: '',
      groupInstanceId: null,
      topics: topics.map((name) => ({
        name: name as TopicName,
        partitions: [
          { partitionIndex: 0, committedOffset: 7n, committedLeaderEpoch: -1, committedMetadata: '' },
        ],
      })),
    })
  const txnCommitErrors = (r: Awaited<ReturnType<typeof txnCommit>>) =>
    r.topics.map((t) => [t.name, t.partitions[0]!.errorCode])
  const txnAcls: Acl[] = [
    { resourceType: ResourceType.TransactionalId, resourceName: 'tx-a', operation: AclOperation.Write },
    { resourceType: ResourceType.Group, resourceName: 'tg', operation: AclOperation.Read },
    { resourceType: ResourceType.Topic, resourceName: 'open', operation: AclOperation.Read },
  ]

  test('TxnOffsetCommit: WRITE on the transactional id, then READ on the group, then READ on each topic', async () => {
    await createAcls(admin, txnAcls)
    const alice = await login('alice')
    const bob = await login('bob')
    await eventually(async () => {
      assert.deepEqual(txnCommitErrors(await txnCommit(alice, 'tx-a', 'tg', ['secret'])), [
        ['secret', ErrorCode.TopicAuthorizationFailed],
      ])
    })
    assert.deepEqual(txnCommitErrors(await txnCommit(bob, 'tx-a', 'tg', ['open'])), [
      ['open', ErrorCode.TransactionalIdAuthorizationFailed],
    ])
    assert.deepEqual(txnCommitErrors(await txnCommit(alice, 'tx-b', 'tg', ['open'])), [
      ['open', ErrorCode.TransactionalIdAuthorizationFailed],
    ])
    assert.deepEqual(txnCommitErrors(await txnCommit(alice, 'tx-a', 'tg-other', ['open'])), [
      ['open', ErrorCode.GroupAuthorizationFailed],
    ])
  })

  test('TxnOffsetCommit over the wire: its offsets pending (UNSTABLE_OFFSET_COMMIT for OffsetFetch requireStable) until the COMMIT marker', async () => {
    await createAcls(admin, txnAcls)
    const alice = await login('alice')
    await eventually(async () => {
      const found = await alice.request(apis.FindCoordinator, 4, { keyType: 0, coordinatorKeys: ['tg'] })
      assert.equal(found.coordinators[0]!.errorCode, ErrorCode.None)
      assert.deepEqual(txnCommitErrors(await txnCommit(alice, 'tx-a', 'tg', ['open', 'secret'])), [
        ['open', ErrorCode.None],
        ['secret', ErrorCode.TopicAuthorizationFailed],
      ])
    })
    const fetched = (requireStable: boolean) =>
      alice.request(apis.OffsetFetch, 8, {
        groups: [{ groupId: 'tg' as never, topics: [{ name: 'open' as TopicName, partitionIndexes: [0] }] }],
        requireStable,
      })
    const partition = (r: Awaited<ReturnType<typeof fetched>>) => {
      const p = r.groups[0]!.topics[0]!.partitions[0]!
      return [r.groups[0]!.errorCode, p.committedOffset, p.errorCode]
    }
    assert.deepEqual(partition(await fetched(true)), [ErrorCode.None, -1n, ErrorCode.UnstableOffsetCommit])
    assert.deepEqual(partition(await fetched(false)), [ErrorCode.None, -1n, ErrorCode.None])
    // The transaction commits: its marker on the group's partition makes the offset committed.
    const markers = await admin.request(apis.WriteTxnMarkers, 1, {
      markers: [
        {
          producerId: 9000n as ProducerId,
          producerEpoch: 0,
          transactionResult: true,
          topics: [
            { name: '__consumer_offsets' as TopicName, partitionIndexes: [partitionForGroup('tg', 50)] },
          ],
          coordinatorEpoch: 0,
        },
      ],
    })
    assert.equal(markers.markers[0]!.topics[0]!.partitions[0]!.errorCode, ErrorCode.None)
    assert.deepEqual(partition(await fetched(true)), [ErrorCode.None, 7n, ErrorCode.None])
  })

  test('configs, ACLs, log dirs, elections, the quorum, records: each refused with its error without the ACL', async () => {
    const bob = await login('bob')
    const dc = await bob.request(apis.DescribeConfigs, 4, {
      resources: [
        { resourceType: 2, resourceName: 'open', configurationKeys: null },
        { resourceType: 4, resourceName: '1', configurationKeys: null },
      ],
      includeSynonyms: false,
      includeDocumentation: false,
    })
    assert.deepEqual(
      dc.results.map((r) => r.errorCode),
      [ErrorCode.TopicAuthorizationFailed, ErrorCode.ClusterAuthorizationFailed],
    )
    const iac = await bob.request(apis.IncrementalAlterConfigs, 1, {
      resources: [
        {
          resourceType: 2,
          resourceName: 'open',
          configs: [{ name: 'retention.ms', configOperation: 0, value: '1000' }],
        },
      ],
      validateOnly: false,
    })
    assert.equal(iac.responses[0]!.errorCode, ErrorCode.TopicAuthorizationFailed)
    const anyFilter = {
      resourceTypeFilter: 1,
      resourceNameFilter: null,
      patternTypeFilter: 1,
      principalFilter: null,
      hostFilter: null,
      operation: 1,
      permissionType: 1,
    }
    assert.equal(
      (await bob.request(apis.DescribeAcls, 3, anyFilter)).errorCode,
      ErrorCode.ClusterAuthorizationFailed,
    )
    const ca = await bob.request(apis.CreateAcls, 3, {
      creations: [
        {
          resourceType: 2,
          resourceName: 'open',
          resourcePatternType: 3,
          principal: 'User:bob',
          host: '*',
          operation: 3,
          permissionType: 3,
        },
      ],
    })
    assert.equal(ca.results[0]!.errorCode, ErrorCode.ClusterAuthorizationFailed)
    assert.equal(
      (await bob.request(apis.DescribeLogDirs, 4, { topics: null })).errorCode,
      ErrorCode.ClusterAuthorizationFailed,
    )
    const el = await bob.request(apis.ElectLeaders, 2, {
      electionType: 0,
      topicPartitions: null,
      timeoutMs: 10_000,
    })
    assert.equal(el.errorCode, ErrorCode.ClusterAuthorizationFailed)
    const dq = await bob.request(apis.DescribeQuorum, 1, {
      topics: [{ topicName: '__cluster_metadata' as TopicName, partitions: [{ partitionIndex: 0 }] }],
    })
    assert.equal(dq.errorCode, ErrorCode.ClusterAuthorizationFailed)
    const dr = await bob.request(apis.DeleteRecords, 2, {
      topics: [{ name: 'open' as TopicName, partitions: [{ partitionIndex: 0, offset: 0n }] }],
      timeoutMs: 10_000,
    })
    assert.equal(dr.topics[0]!.partitions[0]!.errorCode, ErrorCode.TopicAuthorizationFailed)
    const ofe = await bob.request(apis.OffsetForLeaderEpoch, 4, {
      replicaId: -1 as BrokerId,
      topics: [
        {
          topic: 'open' as TopicName,
          partitions: [{ partition: 0, currentLeaderEpoch: -1, leaderEpoch: 0 }],
        },
      ],
    })
    assert.equal(ofe.topics[0]!.partitions[0]!.errorCode, ErrorCode.TopicAuthorizationFailed)
    // The admin (a super user) is refused nothing.
    assert.equal((await admin.request(apis.DescribeLogDirs, 4, { topics: null })).errorCode, ErrorCode.None)
  })

  test('every other API refuses a principal without ACLs with its error; a super user is refused nothing', async () => {
    const bob = await login('bob')
    const anyFilter = {
      resourceTypeFilter: 1,
      resourceNameFilter: null,
      patternTypeFilter: 1,
      principalFilter: null,
      hostFilter: null,
      operation: 1,
      permissionType: 1,
    }
    const group = 'g-bob' as never
    const cases: Array<[string, (c: KafkaConnection) => Promise<number | undefined>, number]> = [
      [
        'Heartbeat',
        async (c) =>
          (
            await c.request(apis.Heartbeat, 4, {
              groupId: group,
              generationId: 1,
              memberId: 'm',
              groupInstanceId: null,
            })
          ).errorCode,
        ErrorCode.GroupAuthorizationFailed,
      ],
      [
        'SyncGroup',
        async (c) =>
          (
            await c.request(apis.SyncGroup, 5, {
              groupId: group,
              generationId: 1,
              memberId: 'm',
              groupInstanceId: null,
              protocolType: 'consumer',
              protocolName: 'range',
              assignments: [],
            })
          ).errorCode,
        ErrorCode.GroupAuthorizationFailed,
      ],
      [
        'LeaveGroup',
        async (c) =>
          (
            await c.request(apis.LeaveGroup, 5, {
              groupId: group,
              members: [{ memberId: 'm', groupInstanceId: null, reason: null }],
            })
          ).errorCode,
        ErrorCode.GroupAuthorizationFailed,
      ],
      [
        'OffsetDelete',
        async (c) => (await c.request(apis.OffsetDelete, 0, { groupId: group, topics: [] })).errorCode,
        ErrorCode.GroupAuthorizationFailed,
      ],
      [
        'DescribeProducers',
        async (c) =>
          (
            await c.request(apis.DescribeProducers, 0, {
              topics: [{ name: 'open' as TopicName, partitionIndexes: [0] }],
            })
          ).topics[0]!.partitions[0]!.errorCode,
        ErrorCode.TopicAuthorizationFailed,
      ],
      [
        'AlterConfigs',
        async (c) =>
          (
            await c.request(apis.AlterConfigs, 2, {
              resources: [
                { resourceType: 4, resourceName: '', configs: [{ name: 'log.cleaner.threads', value: '2' }] },
              ],
              validateOnly: true,
            })
          ).responses[0]!.errorCode,
        ErrorCode.ClusterAuthorizationFailed,
      ],
      [
        'DeleteAcls',
        async (c) =>
          (
            await c.request(apis.DeleteAcls, 3, {
              filters: [{ ...anyFilter, principalFilter: 'User:nobody' }],
            })
          ).filterResults[0]!.errorCode,
        ErrorCode.ClusterAuthorizationFailed,
      ],
      [
        'DescribeUserScramCredentials',
        async (c) => (await c.request(apis.DescribeUserScramCredentials, 0, { users: null })).errorCode,
        ErrorCode.ClusterAuthorizationFailed,
      ],
      [
        'AlterUserScramCredentials',
        async (c) =>
          (
            await c.request(apis.AlterUserScramCredentials, 0, {
              deletions: [{ name: 'x', mechanism: 1 }],
              upsertions: [],
            })
          ).results[0]!.errorCode,
        ErrorCode.ClusterAuthorizationFailed,
      ],
      [
        'ListPartitionReassignments',
        async (c) =>
          (await c.request(apis.ListPartitionReassignments, 0, { timeoutMs: 10_000, topics: null }))
            .errorCode,
        ErrorCode.ClusterAuthorizationFailed,
      ],
      [
        'AlterPartitionReassignments',
        async (c) =>
          (await c.request(apis.AlterPartitionReassignments, 0, { timeoutMs: 10_000, topics: [] })).errorCode,
        ErrorCode.ClusterAuthorizationFailed,
      ],
      [
        'WriteTxnMarkers',
        async (c) =>
          (
            await c.request(apis.WriteTxnMarkers, 1, {
              markers: [
                {
                  producerId: 1n as ProducerId,
                  producerEpoch: 0,
                  transactionResult: false,
                  topics: [{ name: 'open' as TopicName, partitionIndexes: [0] }],
                  coordinatorEpoch: 0,
                },
              ],
            })
          ).markers[0]!.topics[0]!.partitions[0]!.errorCode,
        ErrorCode.ClusterAuthorizationFailed,
      ],
      [
        'DescribeClientQuotas',
        async (c) =>
          (await c.request(apis.DescribeClientQuotas, 1, { components: [], strict: false })).errorCode,
        ErrorCode.ClusterAuthorizationFailed,
      ],
      [
        'FindCoordinator (transaction)',
        async (c) =>
          (await c.request(apis.FindCoordinator, 4, { keyType: 1, coordinatorKeys: ['tx'] })).coordinators[0]!
            .errorCode,
        ErrorCode.TransactionalIdAuthorizationFailed,
      ],
      [
        'InitProducerId (transactional)',
        async (c) =>
          (
            await c.request(apis.InitProducerId, 4, {
              transactionalId: 'tx' as never,
              transactionTimeoutMs: 60_000,
              producerId: -1n as ProducerId,
              producerEpoch: -1,
            })
          ).errorCode,
        ErrorCode.TransactionalIdAuthorizationFailed,
      ],
    ]
    for (const [name, errorOf, denied] of cases) {
      assert.equal(await errorOf(bob), denied, `${name} by bob`)
      assert.notEqual(await errorOf(admin), denied, `${name} by the super user`)
    }
  })

  test('a real client (kafkajs over SASL PLAIN) sees what Kafka shows it: a denied topic fails its send, listings leave it out', async () => {
    const kafka = new Kafka({
      clientId: 'authz-kafkajs',
      brokers: [`${HOST}:${ports.sasl}`],
      logLevel: logLevel.NOTHING,
      retry: { retries: 0 },
      sasl: { mechanism: 'plain', username: 'alice', password: USERS.alice },
    })
    const producer = kafka.producer({ allowAutoTopicCreation: false })
    const kadmin = kafka.admin()
    await producer.connect()
    await kadmin.connect()
    try {
      await producer.send({ topic: 'open', messages: [{ value: 'from kafkajs' }] })
      await assert.rejects(
        producer.send({ topic: 'secret', messages: [{ value: 'no' }] }),
        (e: Error & { cause?: { type?: string } }) => {
          // kafkajs wraps the broker's error in a non-retriable one.
          assert.equal(e.cause?.type, 'TOPIC_AUTHORIZATION_FAILED')
          return true
        },
      )
      const topics = await kadmin.listTopics()
      assert.ok(topics.includes('open'))
      assert.ok(!topics.includes('secret'), `listed: ${topics.join(',')}`)
    } finally {
      await producer.disconnect()
      await kadmin.disconnect()
    }
  })
})

describe('ACLs follow the quorum on every broker, across a controller failover', () => {
  let cluster: EmbeddedCluster
  const conns = new Map<number, KafkaConnection>()
  const on = async (i: number): Promise<KafkaConnection> => {
    let c = conns.get(i)
    if (c === undefined) {
      const n = cluster.nodes[i]!
      c = await openConnection({ host: n.host, port: n.port }, `authz-node-${i + 1}`)
      conns.set(i, c)
    }
    return c
  }

  before(async () => {
    // No super user: User:ANONYMOUS (every PLAINTEXT connection, the brokers' own too) may do what
    // no ACL names, and is denied what a DENY names.
    cluster = await startCluster({
      nodes: 3,
      config: {
        'authorizer.class.name': 'org.apache.kafka.metadata.authorizer.StandardAuthorizer',
        'allow.everyone.if.no.acl.found': 'true',
      },
    })
  })

  after(async () => {
    for (const c of conns.values()) c.close()
    await cluster?.stop()
  })

  test('a DENY created before and one created after the active controller dies hold on every live broker', async () => {
    const c0 = await on(0)
    const spec = (name: string) => ({
      name: name as TopicName,
      numPartitions: 1,
      replicationFactor: 3,
      assignments: [],
      configs: [],
    })
    const created = await c0.request(apis.CreateTopics, 7, {
      topics: [spec('hidden'), spec('frozen')],
      timeoutMs: 20_000,
      validateOnly: false,
    })
    assert.deepEqual(
      created.topics.map((t) => t.errorCode),
      [0, 0],
    )
    const anonymous = { principal: 'User:ANONYMOUS', permissionType: Deny }
    await createAcls(c0, [
      {
        resourceType: ResourceType.Topic,
        resourceName: 'hidden',
        operation: AclOperation.Describe,
        ...anonymous,
      },
    ])
    for (let i = 0; i < 3; i++) {
      await eventually(async () => {
        const all = await metadata(await on(i), null)
        assert.deepEqual(
          all.topics.map((t) => t.name),
          ['frozen'],
          `node ${i + 1}`,
        )
      })
    }
    const quorum = await c0.request(apis.DescribeQuorum, 1, {
      topics: [{ topicName: '__cluster_metadata' as TopicName, partitions: [{ partitionIndex: 0 }] }],
    })
    const leader = quorum.topics[0]!.partitions[0]!.leaderId - 1
    conns.get(leader)?.close()
    conns.delete(leader)
    await cluster.kill(leader)
    const survivors = [0, 1, 2].filter((i) => i !== leader)
    await eventually(async () => {
      await createAcls(await on(survivors[0]!), [
        {
          resourceType: ResourceType.Topic,
          resourceName: 'frozen',
          operation: AclOperation.Write,
          ...anonymous,
        },
      ])
    })
    for (const i of survivors) {
      await eventually(async () => {
        const c = await on(i)
        const named = await metadata(c, ['hidden'])
        assert.equal(named.topics[0]!.errorCode, ErrorCode.TopicAuthorizationFailed, `node ${i + 1}`)
        const p = await produce(c, 'frozen')
        assert.equal(
          p.responses[0]!.partitionResponses[0]!.errorCode,
          ErrorCode.TopicAuthorizationFailed,
          `node ${i + 1}`,
        )
      })
    }
  })

  test('an ACL host matches as in Kafka: from another address the controller listener refuses raft, registration and DescribeCluster', async () => {
    // A live node (the previous test killed the quorum leader).
    const liveIndex = cluster.nodes.findIndex((n) => n.running)
    const live = cluster.nodes[liveIndex]!
    const c0 = await on(liveIndex)
    const other = '127.0.0.2'
    // An ACL on the cluster ends allow.everyone.if.no.acl.found there: the nodes' own requests
    // need the ALLOW, and the DENY of the other host wins over it.
    const onCluster = {
      resourceType: ResourceType.Cluster,
      resourceName: 'kafka-cluster',
      operation: AclOperation.All,
      principal: 'User:ANONYMOUS',
    }
    await createAcls(c0, [onCluster, { ...onCluster, permissionType: Deny, host: other }])
    const clusterId = cluster.clusterId
    await eventually(async () => {
      const dc = await requestFrom(other, live.controllerPort, apis.DescribeCluster, 1, {
        includeClusterAuthorizedOperations: false,
        endpointType: 2,
      })
      assert.equal(dc.errorCode, ErrorCode.ClusterAuthorizationFailed)
    })
    const vote = await requestFrom(other, live.controllerPort, apis.Vote, 0, {
      clusterId,
      topics: [
        {
          topicName: '__cluster_metadata' as TopicName,
          partitions: [
            { partitionIndex: 0, candidateEpoch: 1, candidateId: 99, lastOffsetEpoch: 0, lastOffset: 0n },
          ],
        },
      ],
    })
    assert.equal(vote.errorCode, ErrorCode.ClusterAuthorizationFailed)
    const heartbeat = await requestFrom(other, live.controllerPort, apis.BrokerHeartbeat, 0, {
      brokerId: live.nodeId as BrokerId,
      brokerEpoch: 1n,
      currentMetadataOffset: 0n,
      wantFence: false,
      wantShutDown: false,
    })
    assert.equal(heartbeat.errorCode, ErrorCode.ClusterAuthorizationFailed)
    const logDirs = (address: string) =>
      requestFrom(address, live.port, apis.DescribeLogDirs, 4, { topics: null }).then((r) => r.errorCode)
    assert.equal(await logDirs(other), ErrorCode.ClusterAuthorizationFailed)
    // From 127.0.0.1 (every node's own address) the same principal is refused nothing.
    assert.equal(await logDirs(HOST), ErrorCode.None)
    const dc = await requestFrom(HOST, live.controllerPort, apis.DescribeCluster, 1, {
      includeClusterAuthorizedOperations: false,
      endpointType: 2,
    })
    assert.equal(dc.errorCode, ErrorCode.None)
  })
})

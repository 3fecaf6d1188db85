/**
 * ACLs and SCRAM credentials in a 3-node cluster in this process (`startCluster`, real sockets):
 * CreateAcls and AlterUserScramCredentials sent to a node that is not the active controller are
 * forwarded to it, and every node's DescribeAcls and DescribeUserScramCredentials then answer what
 * the quorum committed; after the active controller is killed, the new one decides on the same ACLs.
 */
import assert from 'node:assert/strict'
import { pbkdf2Sync } from 'node:crypto'
import { after, before, test } from 'node:test'
import { KafkaConnection } from '../../src/client/index.ts'
import { type EmbeddedCluster, startCluster } from '../../src/index.ts'
import { nodeTransport, systemClock } from '../../src/io/index.ts'
import { apis, ErrorCode } from '../../src/protocol/index.ts'

const connectionOptions = {
  clientId: 'acls-cluster',
  clock: systemClock,
  transport: nodeTransport,
  requestTimeoutMs: 30_000,
  inFlightRequestsMax: 4,
  responseBytesMax: 1 << 24,
  connectTimeoutMs: 5_000,
}

let cluster: EmbeddedCluster

before(async () => {
  cluster = await startCluster({
    nodes: 3,
    config: {
      'authorizer.class.name': 'org.apache.kafka.metadata.authorizer.StandardAuthorizer',
      'super.users': 'User:ANONYMOUS',
    },
  })
})

after(async () => {
  await cluster?.stop()
})

async function withNode<T>(i: number, fn: (c: KafkaConnection) => Promise<T>): Promise<T> {
  const n = cluster.nodes[i]!
  const c = await KafkaConnection.open({ host: n.host, port: n.port }, connectionOptions)
  try {
    return await fn(c)
  } finally {
    c.close()
  }
}

/** The index of the node that is the active controller (Metadata's controllerId). */
async function controllerIndex(from: number): Promise<number> {
  const res = await withNode(from, (c) => c.request(apis.Metadata, 12, { topics: [] }))
  return res.controllerId - 1
}

const ANY = 1
const anyFilter = {
  resourceTypeFilter: ANY,
  resourceNameFilter: null,
  patternTypeFilter: ANY,
  principalFilter: null,
  hostFilter: null,
  operation: ANY,
  permissionType: ANY,
}

/** The principals of every ACL node i lists, once it lists `count` of them. */
async function principalsOn(i: number, count: number): Promise<string[]> {
  const deadline = Date.now() + 20_000
  for (;;) {
    const res = await withNode(i, (c) => c.request(apis.DescribeAcls, 3, anyFilter))
    assert.equal(res.errorCode, ErrorCode.None)
    const principals = res.resources.flatMap((r) => r.acls.map((a) => a.principal)).sort()
    if (principals.length === count || Date.now() > deadline) return principals
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

const creation = (principal: string) => ({
  resourceType: 2,
  resourceName: 't',
  resourcePatternType: 3,
  principal,
  host: '*',
  operation: 3,
  permissionType: 3,
})

test('a forwarded CreateAcls reaches every node; the new controller decides on the same ACLs after a failover', async () => {
  const active = await controllerIndex(0)
  const other = (active + 1) % 3
  const created = await withNode(other, (c) =>
    c.request(apis.CreateAcls, 3, { creations: [creation('User:alice'), creation('User:bob')] }),
  )
  assert.deepEqual(
    created.results.map((r) => r.errorCode),
    [ErrorCode.None, ErrorCode.None],
  )
  for (let i = 0; i < 3; i++)
    assert.deepEqual(await principalsOn(i, 2), ['User:alice', 'User:bob'], `node ${i + 1}`)
  await cluster.kill(active)
  const survivor = (active + 2) % 3
  // The same ACL again: the new controller knows it (no duplicate); a new one is added.
  const again = await withNode(survivor, (c) =>
    c.request(apis.CreateAcls, 3, { creations: [creation('User:alice'), creation('User:carol')] }),
  )
  assert.deepEqual(
    again.results.map((r) => r.errorCode),
    [ErrorCode.None, ErrorCode.None],
  )
  for (const i of [other, survivor])
    assert.deepEqual(await principalsOn(i, 3), ['User:alice', 'User:bob', 'User:carol'], `node ${i + 1}`)
  await cluster.restart(active)
  assert.deepEqual(
    await principalsOn(active, 3),
    ['User:alice', 'User:bob', 'User:carol'],
    'the restarted node',
  )
})

test('a forwarded AlterUserScramCredentials reaches every node', async () => {
  const active = await controllerIndex(0)
  const other = (active + 1) % 3
  const salt = Buffer.from('salt-of-dave')
  const res = await withNode(other, (c) =>
    c.request(apis.AlterUserScramCredentials, 0, {
      deletions: [],
      upsertions: [
        {
          name: 'dave',
          mechanism: 2,
          iterations: 8192,
          salt,
          saltedPassword: pbkdf2Sync('secret', salt, 8192, 64, 'sha512'),
        },
      ],
    }),
  )
  assert.deepEqual(
    res.results.map((r) => [r.user, r.errorCode]),
    [['dave', ErrorCode.None]],
  )
  for (let i = 0; i < 3; i++) {
    const deadline = Date.now() + 20_000
    for (;;) {
      const d = await withNode(i, (c) =>
        c.request(apis.DescribeUserScramCredentials, 0, { users: [{ name: 'dave' }] }),
      )
      const result = d.results[0]!
      if (result.errorCode === ErrorCode.None || Date.now() > deadline) {
        assert.deepEqual(result.credentialInfos, [{ mechanism: 2, iterations: 8192 }], `node ${i + 1}`)
        break
      }
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
})

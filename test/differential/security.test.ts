/**
 * Differential: ACLs and SCRAM credentials, the same CreateAcls, DescribeAcls, DeleteAcls,
 * AlterUserScramCredentials and DescribeUserScramCredentials requests to Kafka 4.0 and to Weir,
 * both with StandardAuthorizer and `super.users=User:ANONYMOUS` (PLAINTEXT: every request is
 * ANONYMOUS's, so the admin requests are allowed). admin.test.ts has the same APIs without an
 * authorizer.
 */
import { createHash, pbkdf2Sync } from 'node:crypto'
import { after, before } from 'node:test'
import { apis } from '../../src/protocol/index.ts'
import { Pair, scenario } from './harness.ts'

let pair: Pair

before(async () => {
  pair = await Pair.start('security', {
    'authorizer.class.name': 'org.apache.kafka.metadata.authorizer.StandardAuthorizer',
    'super.users': 'User:ANONYMOUS',
  })
})

after(async () => {
  await pair?.stop()
})

// Kafka's codes (acl.ts of src/security).
const TOPIC = 2
const GROUP = 3
const CLUSTER = 4
const ANY = 1
const MATCH = 2
const LITERAL = 3
const PREFIXED = 4
const ALL = 2
const READ = 3
const WRITE = 4
const DESCRIBE = 8
const DENY = 2
const ALLOW = 3

const acl = (
  resourceType: number,
  resourceName: string,
  resourcePatternType: number,
  principal: string,
  operation: number,
  permissionType = ALLOW,
  host = '*',
) => ({ resourceType, resourceName, resourcePatternType, principal, host, operation, permissionType })

const filter = (fields: Partial<Record<string, number | string | null>> = {}) => ({
  resourceTypeFilter: ANY,
  resourceNameFilter: null,
  patternTypeFilter: ANY,
  principalFilter: null,
  hostFilter: null,
  operation: ANY,
  permissionType: ANY,
  ...fields,
})

scenario(
  'CreateAcls, DescribeAcls, DeleteAcls: literal and prefixed, ALLOW and DENY, refusals, duplicates',
  () => pair,
  async () => {
    const v = pair.version(apis.CreateAcls)
    await pair.both('create-acls', apis.CreateAcls, v, {
      creations: [
        acl(TOPIC, 'orders', LITERAL, 'User:alice', READ),
        acl(TOPIC, 'orders', LITERAL, 'User:alice', READ),
        acl(TOPIC, 'orders', LITERAL, 'User:bob', WRITE, DENY, '10.0.0.1'),
        acl(GROUP, 'team-', PREFIXED, 'User:alice', ALL),
        acl(CLUSTER, 'kafka-cluster', LITERAL, 'User:carol', DESCRIBE),
        acl(CLUSTER, 'other', LITERAL, 'User:carol', DESCRIBE),
        acl(TOPIC, '', LITERAL, 'User:carol', READ),
        acl(TOPIC, '*', LITERAL, 'User:*', DESCRIBE),
      ],
    })
    await pair.both('create-acls/existing', apis.CreateAcls, v, {
      creations: [acl(TOPIC, 'orders', LITERAL, 'User:alice', READ)],
    })
    await pair.both('create-acls/match-pattern', apis.CreateAcls, v, {
      creations: [acl(TOPIC, 'x', LITERAL, 'User:dave', READ), acl(TOPIC, 'y', MATCH, 'User:dave', READ)],
    })
    const d = pair.version(apis.DescribeAcls)
    await pair.both('describe-acls/all', apis.DescribeAcls, d, filter())
    await pair.both(
      'describe-acls/match-orders',
      apis.DescribeAcls,
      d,
      filter({ resourceTypeFilter: TOPIC, resourceNameFilter: 'orders', patternTypeFilter: MATCH }),
    )
    await pair.both('describe-acls/prefixed', apis.DescribeAcls, d, filter({ patternTypeFilter: PREFIXED }))
    await pair.both('describe-acls/bob', apis.DescribeAcls, d, filter({ principalFilter: 'User:bob' }))
    await pair.both('describe-acls/none', apis.DescribeAcls, d, filter({ principalFilter: 'User:nobody' }))
    const x = pair.version(apis.DeleteAcls)
    await pair.both('delete-acls', apis.DeleteAcls, x, {
      filters: [
        filter({ principalFilter: 'User:alice' }),
        filter({ resourceTypeFilter: CLUSTER }),
        filter({ principalFilter: 'User:nobody' }),
      ],
    })
    await pair.both('describe-acls/after-delete', apis.DescribeAcls, d, filter())
  },
)

/** The salted password of `password` as a client sends it (Hi of RFC 5802). */
function salted(hash: 'sha256' | 'sha512', password: string, salt: Buffer, iterations: number): Buffer {
  return pbkdf2Sync(password, salt, iterations, hash === 'sha256' ? 32 : 64, hash)
}

const upsertion = (name: string, mechanism: number, iterations: number) => {
  const salt = createHash('sha256').update(name).digest().subarray(0, 16)
  const hash = mechanism === 1 ? 'sha256' : 'sha512'
  return { name, mechanism, iterations, salt, saltedPassword: salted(hash, 'secret', salt, 4096) }
}

scenario(
  'AlterUserScramCredentials and DescribeUserScramCredentials: upserts, deletions and their refusals',
  () => pair,
  async () => {
    const a = pair.version(apis.AlterUserScramCredentials)
    const d = pair.version(apis.DescribeUserScramCredentials)
    await pair.both('describe-scram/empty', apis.DescribeUserScramCredentials, d, { users: null })
    await pair.both('alter-scram', apis.AlterUserScramCredentials, a, {
      deletions: [{ name: 'nobody', mechanism: 2 }],
      upsertions: [
        upsertion('alice', 2, 4096),
        upsertion('bob', 1, 8192),
        upsertion('few', 1, 4095),
        upsertion('many', 2, 16385),
        upsertion('odd', 0, 4096),
        upsertion('', 1, 4096),
        upsertion('twice', 1, 4096),
        upsertion('twice', 2, 4096),
        upsertion('nobody', 1, 4096),
      ],
    })
    await pair.both('alter-scram/second-mechanism', apis.AlterUserScramCredentials, a, {
      deletions: [],
      upsertions: [upsertion('alice', 1, 16384)],
    })
    await pair.both('describe-scram/all', apis.DescribeUserScramCredentials, d, { users: null })
    await pair.both('describe-scram/named', apis.DescribeUserScramCredentials, d, {
      users: [{ name: 'alice' }, { name: 'nobody' }, { name: 'bob' }, { name: 'bob' }],
    })
    await pair.both('alter-scram/delete', apis.AlterUserScramCredentials, a, {
      deletions: [
        { name: 'alice', mechanism: 2 },
        { name: 'bob', mechanism: 2 },
        { name: 'carol', mechanism: 0 },
      ],
      upsertions: [],
    })
    await pair.both('describe-scram/after-delete', apis.DescribeUserScramCredentials, d, { users: [] })
  },
)

scenario(
  "DescribeConfigs: authorizer.class.name from the catalog, StandardAuthorizer's own keys as keys outside it",
  () => pair,
  async () => {
    const keys = ['authorizer.class.name', 'super.users', 'allow.everyone.if.no.acl.found']
    for (const includeSynonyms of [false, true]) {
      await pair.both(
        `describe-configs/authorizer${includeSynonyms ? '-synonyms' : ''}`,
        apis.DescribeConfigs,
        pair.version(apis.DescribeConfigs),
        {
          resources: [{ resourceType: 4, resourceName: '1', configurationKeys: keys }],
          includeSynonyms,
          includeDocumentation: false,
        },
      )
    }
  },
)

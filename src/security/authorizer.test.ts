import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import type { Uuid } from '../model/index.ts'
import {
  type AclBindingFilter,
  AclOperation,
  AclPermissionType,
  aclFilterMatches,
  aclFromRecord,
  aclToRecord,
  compareAcls,
  PatternType,
  ResourceType,
  type StandardAcl,
} from './acl.ts'
import {
  type Action,
  type AuthorizationContext,
  type AuthorizationResult,
  AuthorizerStateError,
  authorizerConfig,
  parseSuperUsers,
  StandardAuthorizer,
} from './authorizer.ts'
import { PrincipalFormatError, userPrincipal } from './principal.ts'

const { Topic, Group, Cluster } = ResourceType
const { Literal, Prefixed } = PatternType
const { Allow, Deny } = AclPermissionType
const { All, Read, Write, Create, Delete, Alter, Describe, DescribeConfigs, AlterConfigs, IdempotentWrite } =
  AclOperation

/** A distinct, well-formed Uuid text for test ACL number `n`. */
function aclId(n: number): Uuid {
  return `${'A'.repeat(16)}${n.toString(36).padStart(6, 'A')}` as Uuid
}

function acl(fields: Partial<StandardAcl>): StandardAcl {
  return {
    resourceType: Topic,
    resourceName: 'orders',
    patternType: Literal,
    principal: 'User:alice',
    host: '*',
    operation: Read,
    permissionType: Allow,
    ...fields,
  }
}

function authorizer(
  acls: readonly StandardAcl[],
  config: { superUsers?: string; allowEveryone?: boolean } = {},
) {
  const values = {
    superUsers: config.superUsers,
    allowEveryoneIfNoAclFound: String(config.allowEveryone ?? false),
  }
  return new StandardAuthorizer(
    authorizerConfig(values),
    acls.map((a, i) => ({ id: aclId(i), acl: a })),
  )
}

const alice: AuthorizationContext = { principal: userPrincipal('alice'), host: '10.0.0.1' }
const bob: AuthorizationContext = { principal: userPrincipal('bob'), host: '10.0.0.2' }

function action(
  operation: AclOperation,
  resourceName = 'orders',
  resourceType: ResourceType = Topic,
): Action {
  return { operation, resourceType, resourceName }
}

interface Case {
  readonly name: string
  readonly acls: readonly StandardAcl[]
  readonly config?: { superUsers?: string; allowEveryone?: boolean }
  readonly context?: AuthorizationContext
  readonly action: Action
  readonly want: AuthorizationResult
}

const cases: readonly Case[] = [
  { name: 'no ACL, allow.everyone off: denied', acls: [], action: action(Read), want: 'DENIED' },
  {
    name: 'no ACL, allow.everyone on: allowed',
    acls: [],
    config: { allowEveryone: true },
    action: action(Read),
    want: 'ALLOWED',
  },
  {
    name: 'allow.everyone only when the resource has no ACL at all, whoever it names',
    acls: [acl({ principal: 'User:bob' })],
    config: { allowEveryone: true },
    action: action(Read),
    want: 'DENIED',
  },
  {
    name: 'allow.everyone still applies to another resource',
    acls: [acl({ principal: 'User:bob' })],
    config: { allowEveryone: true },
    action: action(Read, 'payments'),
    want: 'ALLOWED',
  },
  { name: 'literal ALLOW', acls: [acl({})], action: action(Read), want: 'ALLOWED' },
  {
    name: 'literal ALLOW of another name',
    acls: [acl({ resourceName: 'order' })],
    action: action(Read),
    want: 'DENIED',
  },
  {
    name: 'literal ALLOW of another type',
    acls: [acl({ resourceType: Group })],
    action: action(Read),
    want: 'DENIED',
  },
  {
    name: 'literal ALLOW of another operation',
    acls: [acl({ operation: Write })],
    action: action(Read),
    want: 'DENIED',
  },
  {
    name: 'super user despite a DENY',
    acls: [acl({ permissionType: Deny, operation: All })],
    config: { superUsers: 'User:admin; User:alice' },
    action: action(Read),
    want: 'ALLOWED',
  },
  {
    name: 'super user with no ACL',
    acls: [],
    config: { superUsers: 'User:alice' },
    action: action(Alter, 'x', Cluster),
    want: 'ALLOWED',
  },
  {
    name: 'DENY wins over ALLOW',
    acls: [acl({}), acl({ permissionType: Deny })],
    action: action(Read),
    want: 'DENIED',
  },
  {
    name: 'prefixed DENY wins over literal ALLOW',
    acls: [acl({}), acl({ resourceName: 'ord', patternType: Prefixed, permissionType: Deny })],
    action: action(Read),
    want: 'DENIED',
  },
  {
    name: 'wildcard-resource DENY wins over literal ALLOW',
    acls: [acl({}), acl({ resourceName: '*', permissionType: Deny })],
    action: action(Read),
    want: 'DENIED',
  },
  {
    name: 'DENY of another operation does not deny',
    acls: [acl({}), acl({ permissionType: Deny, operation: Write })],
    action: action(Read),
    want: 'ALLOWED',
  },
  {
    name: 'DENY of another host does not deny',
    acls: [acl({}), acl({ permissionType: Deny, host: '10.9.9.9' })],
    action: action(Read),
    want: 'ALLOWED',
  },
  {
    name: 'DENY ALL denies everything',
    acls: [acl({ operation: Alter }), acl({ permissionType: Deny, operation: All })],
    action: action(Alter),
    want: 'DENIED',
  },
  {
    name: 'wildcard principal',
    acls: [acl({ principal: 'User:*' })],
    context: bob,
    action: action(Read),
    want: 'ALLOWED',
  },
  {
    name: 'wildcard principal DENY',
    acls: [acl({}), acl({ principal: 'User:*', permissionType: Deny })],
    action: action(Read),
    want: 'DENIED',
  },
  { name: 'another principal', acls: [acl({})], context: bob, action: action(Read), want: 'DENIED' },
  {
    name: 'principal type matters',
    acls: [acl({ principal: 'Group:alice' })],
    action: action(Read),
    want: 'DENIED',
  },
  {
    name: 'a non-User wildcard is no wildcard',
    acls: [acl({ principal: 'Group:*' })],
    action: action(Read),
    want: 'DENIED',
  },
  { name: 'wildcard host', acls: [acl({ host: '*' })], action: action(Read), want: 'ALLOWED' },
  { name: 'exact host', acls: [acl({ host: '10.0.0.1' })], action: action(Read), want: 'ALLOWED' },
  { name: 'another host', acls: [acl({ host: '10.0.0.2' })], action: action(Read), want: 'DENIED' },
  {
    name: 'literal * resource',
    acls: [acl({ resourceName: '*' })],
    action: action(Read, 'anything'),
    want: 'ALLOWED',
  },
  {
    name: 'prefixed * is a prefix, not a wildcard',
    acls: [acl({ resourceName: '*', patternType: Prefixed })],
    action: action(Read, 'anything'),
    want: 'DENIED',
  },
  {
    name: 'prefixed match',
    acls: [acl({ resourceName: 'ord', patternType: Prefixed })],
    action: action(Read),
    want: 'ALLOWED',
  },
  {
    name: 'prefixed equal to the name',
    acls: [acl({ resourceName: 'orders', patternType: Prefixed })],
    action: action(Read),
    want: 'ALLOWED',
  },
  {
    name: 'prefixed longer than the name',
    acls: [acl({ resourceName: 'orders-eu', patternType: Prefixed })],
    action: action(Read),
    want: 'DENIED',
  },
  {
    name: 'prefixed is case sensitive',
    acls: [acl({ resourceName: 'Ord', patternType: Prefixed })],
    action: action(Read),
    want: 'DENIED',
  },
  {
    name: 'literal that is a prefix does not match',
    acls: [acl({ resourceName: 'ord' })],
    action: action(Read),
    want: 'DENIED',
  },
  {
    name: 'READ implies DESCRIBE',
    acls: [acl({ operation: Read })],
    action: action(Describe),
    want: 'ALLOWED',
  },
  {
    name: 'WRITE implies DESCRIBE',
    acls: [acl({ operation: Write })],
    action: action(Describe),
    want: 'ALLOWED',
  },
  {
    name: 'DELETE implies DESCRIBE',
    acls: [acl({ operation: Delete })],
    action: action(Describe),
    want: 'ALLOWED',
  },
  {
    name: 'ALTER implies DESCRIBE',
    acls: [acl({ operation: Alter })],
    action: action(Describe),
    want: 'ALLOWED',
  },
  {
    name: 'CREATE does not imply DESCRIBE',
    acls: [acl({ operation: Create })],
    action: action(Describe),
    want: 'DENIED',
  },
  {
    name: 'ALTER_CONFIGS implies DESCRIBE_CONFIGS',
    acls: [acl({ operation: AlterConfigs })],
    action: action(DescribeConfigs),
    want: 'ALLOWED',
  },
  {
    name: 'ALTER does not imply DESCRIBE_CONFIGS',
    acls: [acl({ operation: Alter })],
    action: action(DescribeConfigs),
    want: 'DENIED',
  },
  {
    name: 'DESCRIBE does not imply READ',
    acls: [acl({ operation: Describe })],
    action: action(Read),
    want: 'DENIED',
  },
  {
    name: 'ALL allows every operation',
    acls: [acl({ operation: All })],
    action: action(IdempotentWrite),
    want: 'ALLOWED',
  },
  {
    name: 'a DENY of READ does not deny the DESCRIBE an ALLOW implies',
    acls: [acl({ operation: Write }), acl({ operation: Read, permissionType: Deny })],
    action: action(Describe),
    want: 'ALLOWED',
  },
  {
    name: 'a DENY of READ denies DESCRIBE when no ALLOW implies it (the resource has ACLs)',
    acls: [acl({ operation: Read, permissionType: Deny })],
    config: { allowEveryone: true },
    action: action(Describe),
    want: 'DENIED',
  },
  {
    name: 'a prefix ACL on another branch of the trie does not match',
    acls: [
      acl({ resourceName: 'orx', patternType: Prefixed }),
      acl({ resourceName: 'o', patternType: Prefixed, principal: 'User:bob' }),
    ],
    action: action(Read),
    want: 'DENIED',
  },
]

describe('StandardAuthorizer.authorize', () => {
  for (const c of cases) {
    test(c.name, () => {
      assert.equal(authorizer(c.acls, c.config).authorize(c.context ?? alice, c.action), c.want)
    })
  }
})

describe('StandardAuthorizer state', () => {
  test('an id twice, an equal ACL twice and an unknown id are refused as Kafka refuses them', () => {
    const auth = authorizer([acl({})])
    assert.throws(() => auth.addAcl(aclId(0), acl({ resourceName: 'x' })), /already exists/)
    assert.throws(() => auth.addAcl(aclId(1), acl({})), /Unable to add the ACL/)
    assert.throws(() => auth.removeAcl(aclId(5)), AuthorizerStateError)
  })

  test('removing the last ACL of a resource brings allow.everyone.if.no.acl.found back', () => {
    const auth = authorizer([acl({ principal: 'User:bob', patternType: Prefixed, resourceName: 'or' })], {
      allowEveryone: true,
    })
    assert.equal(auth.authorize(alice, action(Read)), 'DENIED')
    auth.removeAcl(aclId(0))
    assert.equal(auth.aclCount, 0)
    assert.equal(auth.authorize(alice, action(Read)), 'ALLOWED')
  })

  test('records round trip and idOf finds an equal ACL', () => {
    const a = acl({ patternType: Prefixed, operation: Write, permissionType: Deny })
    const { id, acl: back } = aclFromRecord(aclToRecord(aclId(3), a))
    assert.deepEqual(back, a)
    const auth = new StandardAuthorizer(authorizerConfig({}), [{ id, acl: back }])
    assert.equal(auth.idOf({ ...a }), aclId(3))
    assert.equal(auth.getAcl(aclId(3)), back)
  })

  test('super.users as Kafka parses it', () => {
    assert.deepEqual(parseSuperUsers(' User:a ;;User:b;  '), ['User:a', 'User:b'])
    assert.deepEqual(parseSuperUsers(undefined), [])
    assert.throws(() => parseSuperUsers('admin'), PrincipalFormatError)
    assert.equal(authorizerConfig({ allowEveryoneIfNoAclFound: ' TRUE ' }).allowEveryoneIfNoAclFound, true)
    assert.equal(authorizerConfig({ allowEveryoneIfNoAclFound: 'yes' }).allowEveryoneIfNoAclFound, false)
  })
})

describe('StandardAuthorizer.authorizeByResourceType', () => {
  const byType = (
    acls: readonly StandardAcl[],
    config: { superUsers?: string; allowEveryone?: boolean } = {},
  ) => authorizer(acls, config).authorizeByResourceType(alice, Write, Topic)
  const write = (fields: Partial<StandardAcl>) => acl({ operation: Write, ...fields })

  test('no ACL: the default result, through the hard-coded name', () => {
    assert.equal(byType([]), 'DENIED')
    assert.equal(byType([], { allowEveryone: true }), 'ALLOWED')
    assert.equal(byType([], { superUsers: 'User:alice' }), 'ALLOWED')
  })
  test('an ALLOW on one topic is enough', () =>
    assert.equal(byType([write({ resourceName: 't1' })]), 'ALLOWED'))
  test('an ALLOW of ALL counts, an implied one does not', () => {
    assert.equal(byType([write({ operation: All })]), 'ALLOWED')
    assert.equal(
      authorizer([acl({ operation: Read })]).authorizeByResourceType(alice, Describe, Topic),
      'DENIED',
    )
  })
  test('a literal DENY cancels the same literal ALLOW', () => {
    assert.equal(byType([write({}), write({ permissionType: Deny })]), 'DENIED')
  })
  test('a prefix DENY dominates the ALLOWs it starts', () => {
    assert.equal(
      byType([
        write({ resourceName: 'tab' }),
        write({ resourceName: 'ta', patternType: Prefixed, permissionType: Deny }),
      ]),
      'DENIED',
    )
    assert.equal(
      byType([
        write({ resourceName: 'ta', patternType: Prefixed }),
        write({ resourceName: 't', patternType: Prefixed, permissionType: Deny }),
      ]),
      'DENIED',
    )
    assert.equal(
      byType([
        write({ resourceName: 'tab' }),
        write({ resourceName: 'tb', patternType: Prefixed, permissionType: Deny }),
      ]),
      'ALLOWED',
    )
  })
  test('a longer prefix DENY does not dominate a shorter prefix ALLOW', () => {
    assert.equal(
      byType([
        write({ resourceName: 't', patternType: Prefixed }),
        write({ resourceName: 'ta', patternType: Prefixed, permissionType: Deny }),
      ]),
      'ALLOWED',
    )
  })
  test('a wildcard DENY denies, a wildcard ALLOW allows', () => {
    assert.equal(
      byType([write({ resourceName: 'a' }), write({ resourceName: '*', permissionType: Deny })]),
      'DENIED',
    )
    assert.equal(
      byType([write({ resourceName: '*' }), write({ resourceName: 'a', permissionType: Deny })]),
      'ALLOWED',
    )
  })
  test('other principals and hosts do not count; User:* does', () => {
    assert.equal(byType([write({ principal: 'User:bob' })]), 'DENIED')
    assert.equal(byType([write({ host: '10.9.9.9' })]), 'DENIED')
    assert.equal(byType([write({ principal: 'User:*', resourceName: 'x' })]), 'ALLOWED')
  })
  test('ANY and UNKNOWN are refused', () => {
    const auth = authorizer([])
    assert.throws(() => auth.authorizeByResourceType(alice, AclOperation.Any, Topic), AuthorizerStateError)
    assert.throws(() => auth.authorizeByResourceType(alice, Write, ResourceType.Any), AuthorizerStateError)
  })
})

// --- properties ---------------------------------------------------------------------------

const names = ['', 'a', 'ab', 'abc', 'abd', 'b', 'ba', '*']
const arbAcl: fc.Arbitrary<StandardAcl> = fc.record({
  resourceType: fc.constantFrom(Topic, Group),
  resourceName: fc.constantFrom(...names),
  patternType: fc.constantFrom(Literal, Prefixed),
  principal: fc.constantFrom('User:alice', 'User:bob', 'User:*', 'Group:alice'),
  host: fc.constantFrom('*', '10.0.0.1', '10.0.0.2'),
  operation: fc.constantFrom(All, Read, Write, Describe, AlterConfigs, DescribeConfigs, Delete),
  permissionType: fc.constantFrom(Allow, Deny),
})
const arbAction: fc.Arbitrary<Action> = fc.record({
  operation: fc.constantFrom(Read, Write, Describe, DescribeConfigs, Delete, AlterConfigs),
  resourceType: fc.constantFrom(Topic, Group),
  resourceName: fc.constantFrom(...names.filter((n) => n !== ''), 'abcd', 'bb', 'c'),
})
const arbContext: fc.Arbitrary<AuthorizationContext> = fc.record({
  principal: fc.constantFrom(userPrincipal('alice'), userPrincipal('bob'), userPrincipal('carol')),
  host: fc.constantFrom('10.0.0.1', '10.0.0.2'),
})
const arbAcls = fc.uniqueArray(arbAcl, { maxLength: 24, selector: (a) => JSON.stringify(a) })

const impliesDescribe: readonly AclOperation[] = [Read, Write, Delete, Alter]

/** Kafka's rules stated directly over every ACL: the reference for the index. */
function bruteForce(
  acls: readonly StandardAcl[],
  allowEveryone: boolean,
  context: AuthorizationContext,
  asked: Action,
): AuthorizationResult {
  const own = `${context.principal.principalType}:${context.principal.name}`
  const onResource = acls.filter(
    (a) =>
      a.resourceType === asked.resourceType &&
      (a.patternType === Literal
        ? a.resourceName === asked.resourceName || a.resourceName === '*'
        : asked.resourceName.startsWith(a.resourceName)),
  )
  const applies = (a: StandardAcl) => {
    if (a.principal !== own && a.principal !== 'User:*') return false
    if (a.host !== '*' && a.host !== context.host) return false
    if (a.operation === All || a.operation === asked.operation) return true
    if (a.permissionType === Deny) return false
    if (asked.operation === Describe) return impliesDescribe.includes(a.operation)
    return asked.operation === DescribeConfigs && a.operation === AlterConfigs
  }
  const matching = onResource.filter(applies)
  if (matching.some((a) => a.permissionType === Deny)) return 'DENIED'
  if (matching.length > 0) return 'ALLOWED'
  return onResource.length > 0 || !allowEveryone ? 'DENIED' : 'ALLOWED'
}

describe('StandardAuthorizer properties', () => {
  test('the indexed lookup agrees with a scan of every ACL', () => {
    fc.assert(
      fc.property(arbAcls, fc.boolean(), arbContext, arbAction, (acls, allowEveryone, context, asked) => {
        const got = authorizer(acls, { allowEveryone }).authorize(context, asked)
        assert.equal(got, bruteForce(acls, allowEveryone, context, asked))
      }),
      { numRuns: 2000 },
    )
  })

  test('the index stays right through removals', () => {
    fc.assert(
      fc.property(arbAcls, fc.array(fc.nat()), arbContext, arbAction, (acls, removals, context, asked) => {
        const auth = authorizer(acls)
        const kept = new Map(acls.map((a, i) => [i, a]))
        for (const r of removals) {
          if (kept.size === 0) break
          const index = [...kept.keys()][r % kept.size]!
          auth.removeAcl(aclId(index))
          kept.delete(index)
        }
        assert.equal(auth.authorize(context, asked), bruteForce([...kept.values()], false, context, asked))
      }),
      { numRuns: 500 },
    )
  })

  test('adding a DENY never turns DENIED into ALLOWED', () => {
    fc.assert(
      fc.property(
        arbAcls,
        arbAcl,
        fc.boolean(),
        arbContext,
        arbAction,
        (acls, extra, allowEveryone, context, asked) => {
          const deny = { ...extra, permissionType: Deny }
          fc.pre(!acls.some((a) => JSON.stringify(a) === JSON.stringify(deny)))
          const before = authorizer(acls, { allowEveryone }).authorize(context, asked)
          const after = authorizer([...acls, deny], { allowEveryone }).authorize(context, asked)
          if (before === 'DENIED') assert.equal(after, 'DENIED')
        },
      ),
      { numRuns: 1000 },
    )
  })

  test('adding an ALLOW never turns ALLOWED into DENIED (allow.everyone.if.no.acl.found off)', () => {
    fc.assert(
      fc.property(arbAcls, arbAcl, arbContext, arbAction, (acls, extra, context, asked) => {
        const allow = { ...extra, permissionType: Allow }
        fc.pre(!acls.some((a) => JSON.stringify(a) === JSON.stringify(allow)))
        const before = authorizer(acls).authorize(context, asked)
        const after = authorizer([...acls, allow]).authorize(context, asked)
        if (before === 'ALLOWED') assert.equal(after, 'ALLOWED')
      }),
      { numRuns: 1000 },
    )
  })

  test('with allow.everyone.if.no.acl.found on, an ALLOW for another principal does deny the rest, as in Kafka', () => {
    const config = { allowEveryone: true }
    assert.equal(authorizer([], config).authorize(alice, action(Read)), 'ALLOWED')
    assert.equal(
      authorizer([acl({ principal: 'User:bob' })], config).authorize(alice, action(Read)),
      'DENIED',
    )
  })

  const arbFilter: fc.Arbitrary<AclBindingFilter> = fc.record({
    resourceType: fc.constantFrom(ResourceType.Any, Topic, Group),
    resourceName: fc.option(fc.constantFrom(...names, 'abcd'), { nil: null }),
    patternType: fc.constantFrom(PatternType.Any, PatternType.Match, Literal, Prefixed),
    principal: fc.option(fc.constantFrom('User:alice', 'User:*'), { nil: null }),
    host: fc.option(fc.constantFrom('*', '10.0.0.1'), { nil: null }),
    operation: fc.constantFrom(AclOperation.Any, Read, All),
    permissionType: fc.constantFrom(AclPermissionType.Any, Allow, Deny),
  })

  test('acls(filter) returns exactly the matching ACLs, in Kafka order', () => {
    fc.assert(
      fc.property(arbAcls, arbFilter, (acls, filter) => {
        const got = authorizer(acls)
          .acls(filter)
          .map((entry) => entry.acl)
        const want = acls.filter((a) => aclFilterMatches(filter, a)).sort(compareAcls)
        assert.deepEqual(got, want)
      }),
      { numRuns: 1000 },
    )
  })
})

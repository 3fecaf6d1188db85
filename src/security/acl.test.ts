import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { type CreateAclsRequestData, ErrorCode } from '../protocol/index.ts'
import {
  type AclBindingFilter,
  AclOperation,
  AclPermissionType,
  ANY_ACL_FILTER,
  aclOperationFromCode,
  aclOperationName,
  compareAcls,
  entryFilterMatches,
  filterIsUnknown,
  findIndefiniteField,
  PatternType,
  parseAclOperation,
  parseResourceType,
  patternFilterMatches,
  ResourceType,
  resourceTypeFromCode,
  resourceTypeName,
  type StandardAcl,
} from './acl.ts'
import {
  aclFromCreation,
  checkCreateAclsRequest,
  deleteAclsFilters,
  describeAclsFilter,
  groupByPattern,
  validateAclCreation,
} from './acl-requests.ts'
import { ANONYMOUS_PRINCIPAL, formatPrincipal, PrincipalFormatError, parsePrincipal } from './principal.ts'

const { Topic, Group } = ResourceType
const { Literal, Prefixed, Match } = PatternType

function acl(resourceType: ResourceType, resourceName: string, patternType: PatternType): StandardAcl {
  return {
    resourceType,
    resourceName,
    patternType,
    principal: 'User:alice',
    host: '*',
    operation: AclOperation.Read,
    permissionType: AclPermissionType.Allow,
  }
}

function filter(
  resourceType: ResourceType,
  resourceName: string | null,
  patternType: PatternType,
): AclBindingFilter {
  return { ...ANY_ACL_FILTER, resourceType, resourceName, patternType }
}

describe('codes and names', () => {
  test("Kafka's wire codes", () => {
    assert.deepEqual(
      [
        Topic,
        Group,
        ResourceType.Cluster,
        ResourceType.TransactionalId,
        ResourceType.DelegationToken,
        ResourceType.User,
      ],
      [2, 3, 4, 5, 6, 7],
    )
    assert.equal(AclOperation.DescribeTokens, 14)
    assert.equal(AclOperation.IdempotentWrite, 12)
    assert.deepEqual([PatternType.Any, Match, Literal, Prefixed], [1, 2, 3, 4])
    assert.deepEqual([AclPermissionType.Deny, AclPermissionType.Allow], [2, 3])
  })

  test('unknown codes read as UNKNOWN; names as Kafka prints and reads them', () => {
    assert.equal(resourceTypeFromCode(42), ResourceType.Unknown)
    assert.equal(aclOperationFromCode(-1), AclOperation.Unknown)
    assert.equal(resourceTypeName(ResourceType.TransactionalId), 'TRANSACTIONAL_ID')
    assert.equal(aclOperationName(AclOperation.DescribeConfigs), 'DESCRIBE_CONFIGS')
    assert.equal(parseResourceType('TransactionalId'), ResourceType.TransactionalId)
    assert.equal(parseResourceType('topic'), Topic)
    assert.equal(parseResourceType('TRANSACTIONAL_ID'), ResourceType.Unknown)
    assert.equal(parseAclOperation('IdempotentWrite'), AclOperation.IdempotentWrite)
  })

  test('principals', () => {
    assert.equal(formatPrincipal(ANONYMOUS_PRINCIPAL), 'User:ANONYMOUS')
    assert.deepEqual(parsePrincipal('User:CN=a:b'), { principalType: 'User', name: 'CN=a:b' })
    assert.throws(() => parsePrincipal('alice'), PrincipalFormatError)
  })

  test("Kafka's order: type, name reversed, pattern type, operation, principal, host, permission", () => {
    const sorted = [
      acl(Group, 'a', Literal),
      acl(Topic, 'b', Prefixed),
      acl(Topic, 'a', Literal),
      acl(Topic, 'b', Literal),
    ].sort(compareAcls)
    assert.deepEqual(
      sorted.map((a) => `${a.resourceType}:${a.resourceName}:${a.patternType}`),
      ['2:b:3', '2:b:4', '2:a:3', '3:a:3'],
    )
  })
})

/** Kafka's ResourcePatternFilterTest, case by case: filter, pattern, whether it matches. */
const patternCases: readonly [string, AclBindingFilter, StandardAcl, boolean][] = [
  ['different resource type', filter(Topic, 'Name', Literal), acl(Group, 'Name', Literal), false],
  ['different name', filter(Topic, 'Different', Prefixed), acl(Topic, 'Name', Prefixed), false],
  ['different name case', filter(Topic, 'NAME', Literal), acl(Topic, 'Name', Literal), false],
  ['different pattern type', filter(Topic, 'Name', Literal), acl(Topic, 'Name', Prefixed), false],
  ['resource type ANY', filter(ResourceType.Any, 'Name', Prefixed), acl(Topic, 'Name', Prefixed), true],
  ['resource name null', filter(Topic, null, Prefixed), acl(Topic, 'Name', Prefixed), true],
  ['pattern type ANY', filter(Topic, null, PatternType.Any), acl(Topic, 'Name', Prefixed), true],
  ['pattern type MATCH', filter(Topic, null, Match), acl(Topic, 'Name', Prefixed), true],
  ['literal exact', filter(Topic, 'Name', Literal), acl(Topic, 'Name', Literal), true],
  ['literal, filter ANY', filter(Topic, 'Name', PatternType.Any), acl(Topic, 'Name', Literal), true],
  ['literal, filter MATCH', filter(Topic, 'Name', Match), acl(Topic, 'Name', Literal), true],
  ['literal is no prefix', filter(Topic, 'Name-something', Literal), acl(Topic, 'Name', Literal), false],
  ['literal wildcard exact', filter(Topic, '*', Literal), acl(Topic, '*', Literal), true],
  ['literal wildcard against another name', filter(Topic, 'Name', Literal), acl(Topic, '*', Literal), false],
  ['literal wildcard the other way round', filter(Topic, '*', Literal), acl(Topic, 'Name', Literal), false],
  ['literal wildcard, filter PREFIXED', filter(Topic, 'Name', Prefixed), acl(Topic, '*', Literal), false],
  ['literal wildcard, filter ANY', filter(Topic, 'Name', PatternType.Any), acl(Topic, '*', Literal), false],
  ['literal wildcard, filter MATCH', filter(Topic, 'Name', Match), acl(Topic, '*', Literal), true],
  ['prefixed exact', filter(Topic, 'Name', Prefixed), acl(Topic, 'Name', Prefixed), true],
  [
    'both prefixed, filter a prefix of the pattern',
    filter(Topic, 'Name', Prefixed),
    acl(Topic, 'Name-something', Prefixed),
    false,
  ],
  [
    'both prefixed, pattern a prefix of the filter',
    filter(Topic, 'Name-something', Prefixed),
    acl(Topic, 'Name', Prefixed),
    false,
  ],
  [
    'prefixed, filter ANY',
    filter(Topic, 'Name-something', PatternType.Any),
    acl(Topic, 'Name', Prefixed),
    false,
  ],
  ['prefixed, filter MATCH', filter(Topic, 'Name-something', Match), acl(Topic, 'Name', Prefixed), true],
]

describe('binding filters', () => {
  for (const [name, f, a, want] of patternCases) {
    test(`pattern: ${name}`, () => assert.equal(patternFilterMatches(f, a), want))
  }

  test('entry filter: null principal and host, ANY operation and permission match all', () => {
    const a = acl(Topic, 'x', Literal)
    assert.equal(entryFilterMatches(ANY_ACL_FILTER, a), true)
    assert.equal(entryFilterMatches({ ...ANY_ACL_FILTER, principal: 'User:bob' }, a), false)
    assert.equal(entryFilterMatches({ ...ANY_ACL_FILTER, host: '10.0.0.1' }, a), false)
    assert.equal(entryFilterMatches({ ...ANY_ACL_FILTER, operation: AclOperation.All }, a), false)
    assert.equal(entryFilterMatches({ ...ANY_ACL_FILTER, permissionType: AclPermissionType.Deny }, a), false)
  })

  test('unknown and indefinite filters', () => {
    assert.equal(filterIsUnknown({ ...ANY_ACL_FILTER, operation: AclOperation.Unknown }), true)
    assert.equal(filterIsUnknown(ANY_ACL_FILTER), false)
    assert.equal(findIndefiniteField(ANY_ACL_FILTER), 'Resource type is ANY.')
    assert.equal(findIndefiniteField({ ...acl(Topic, 'x', Literal) }), null)
  })
})

const creation: CreateAclsRequestData.AclCreation = {
  resourceType: Topic,
  resourceName: 'orders',
  resourcePatternType: Literal,
  principal: 'User:alice',
  host: '*',
  operation: AclOperation.Read,
  permissionType: AclPermissionType.Allow,
}

describe('CreateAcls, DescribeAcls and DeleteAcls refusals', () => {
  test('an UNKNOWN code anywhere: Kafka fails to parse the request', () => {
    for (const field of ['resourceType', 'resourcePatternType', 'operation', 'permissionType']) {
      const refusal = checkCreateAclsRequest([creation, { ...creation, [field]: 0 }])
      assert.equal(refusal?.kind, 'malformed', field)
    }
    assert.equal(checkCreateAclsRequest([{ ...creation, operation: 99 }])?.kind, 'malformed')
  })

  test('ANY or MATCH in a binding: every creation answers UNKNOWN_SERVER_ERROR, without a message', () => {
    const cases: readonly [Partial<typeof creation>, string][] = [
      [{ resourceType: ResourceType.Any }, 'resourceType must not be ANY'],
      [{ resourcePatternType: Match }, 'patternType must not be MATCH'],
      [{ resourcePatternType: PatternType.Any }, 'patternType must not be ANY'],
      [{ operation: AclOperation.Any }, 'operation must not be ANY'],
      [{ permissionType: AclPermissionType.Any }, 'permissionType must not be ANY'],
    ]
    for (const [fields, message] of cases) {
      assert.deepEqual(checkCreateAclsRequest([creation, { ...creation, ...fields }]), {
        kind: 'every-creation',
        error: { errorCode: ErrorCode.UnknownServerError, message: null },
        reason: message,
      })
    }
    assert.equal(checkCreateAclsRequest([creation]), null)
  })

  test('per creation: the CLUSTER name and empty names', () => {
    const cluster = aclFromCreation({
      ...creation,
      resourceType: ResourceType.Cluster,
      resourceName: 'other',
    })
    assert.deepEqual(validateAclCreation(cluster), {
      errorCode: ErrorCode.InvalidRequest,
      message: 'The only valid name for the CLUSTER resource is kafka-cluster',
    })
    assert.equal(validateAclCreation({ ...cluster, resourceName: 'kafka-cluster' }), null)
    assert.equal(
      validateAclCreation(aclFromCreation({ ...creation, resourceName: '' }))?.message,
      'Invalid empty resource name',
    )
    assert.equal(
      validateAclCreation(aclFromCreation({ ...creation, resourcePatternType: Prefixed, resourceName: '*' })),
      null,
    )
  })

  const wireFilter = {
    resourceTypeFilter: ResourceType.Any,
    resourceNameFilter: null,
    patternTypeFilter: PatternType.Any,
    principalFilter: null,
    hostFilter: null,
    operation: AclOperation.Any,
    permissionType: AclPermissionType.Any,
  }

  test('filters: ANY is fine, UNKNOWN is a parse failure', () => {
    assert.deepEqual(describeAclsFilter(wireFilter), ANY_ACL_FILTER)
    assert.ok('malformed' in describeAclsFilter({ ...wireFilter, patternTypeFilter: 0 }))
    assert.ok('malformed' in deleteAclsFilters([wireFilter, { ...wireFilter, operation: 0 }]))
    assert.deepEqual(deleteAclsFilters([wireFilter]), [ANY_ACL_FILTER])
  })

  test('DescribeAcls groups the ACLs by pattern', () => {
    const read = acl(Topic, 'a', Literal)
    const write = { ...read, operation: AclOperation.Write }
    const prefixed = acl(Topic, 'a', Prefixed)
    assert.deepEqual(groupByPattern([read, prefixed, write]), [
      {
        resourceType: Topic,
        resourceName: 'a',
        patternType: Literal,
        acls: [
          {
            principal: 'User:alice',
            host: '*',
            operation: AclOperation.Read,
            permissionType: AclPermissionType.Allow,
          },
          {
            principal: 'User:alice',
            host: '*',
            operation: AclOperation.Write,
            permissionType: AclPermissionType.Allow,
          },
        ],
      },
      {
        resourceType: Topic,
        resourceName: 'a',
        patternType: Prefixed,
        acls: [
          {
            principal: 'User:alice',
            host: '*',
            operation: AclOperation.Read,
            permissionType: AclPermissionType.Allow,
          },
        ],
      },
    ])
  })
})

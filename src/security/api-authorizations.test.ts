import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { Uuid } from '../model/index.ts'
import { ApiKey, ErrorCode } from '../protocol/index.ts'
import { AclOperation, AclPermissionType, PatternType, ResourceType, type StandardAcl } from './acl.ts'
import {
  API_AUTHORIZATIONS,
  AUTHORIZED_OPERATIONS_OMITTED,
  authorizationError,
  authorizedOperations,
  clusterAuthorizedOperations,
  from32BitField,
  SUPPORTED_OPERATIONS,
  to32BitField,
} from './api-authorizations.ts'
import { authorizerConfig, StandardAuthorizer } from './authorizer.ts'
import { userPrincipal } from './principal.ts'

const alice = { principal: userPrincipal('alice'), host: '10.0.0.1' }

function authorizer(acls: readonly Partial<StandardAcl>[]): StandardAuthorizer {
  const full = acls.map((fields, i) => ({
    id: `AAAAAAAAAAAAAAAAAAAAA${i}` as Uuid,
    acl: {
      resourceType: ResourceType.Topic,
      resourceName: 'orders',
      patternType: PatternType.Literal,
      principal: 'User:alice',
      host: '*',
      operation: AclOperation.Read,
      permissionType: AclPermissionType.Allow,
      ...fields,
    },
  }))
  return new StandardAuthorizer(authorizerConfig({}), full)
}

describe('the API table', () => {
  test('every API Kafka defines has an entry', () => {
    for (const [name, key] of Object.entries(ApiKey)) assert.ok(API_AUTHORIZATIONS.has(key), name)
  })

  test('the checks the handlers rely on', () => {
    const first = (key: ApiKey) => API_AUTHORIZATIONS.get(key)!.checks
    assert.deepEqual(
      first(ApiKey.Produce).map((c) => [c.resourceType, c.operation, c.error]),
      [
        [ResourceType.TransactionalId, AclOperation.Write, ErrorCode.TransactionalIdAuthorizationFailed],
        [ResourceType.Topic, AclOperation.Write, ErrorCode.TopicAuthorizationFailed],
      ],
    )
    assert.equal(first(ApiKey.JoinGroup)[0]!.error, ErrorCode.GroupAuthorizationFailed)
    assert.deepEqual(
      first(ApiKey.CreateAcls).map((c) => [c.resourceType, c.operation, c.onDenied]),
      [[ResourceType.Cluster, AclOperation.Alter, 'request']],
    )
    assert.equal(first(ApiKey.DescribeAcls)[0]!.operation, AclOperation.Describe)
    assert.equal(first(ApiKey.Vote)[0]!.operation, AclOperation.ClusterAction)
    const idempotent = first(ApiKey.InitProducerId)[1]!
    assert.equal(idempotent.operation, AclOperation.IdempotentWrite)
    assert.equal(idempotent.orElse?.byResourceType, true)
    const createTopics = first(ApiKey.CreateTopics)[0]!
    assert.equal(createTopics.first, true)
    assert.equal(createTopics.orElse?.resourceType, ResourceType.Cluster)
    assert.deepEqual(first(ApiKey.ApiVersions), [])
  })

  test('denial errors by resource type', () => {
    assert.equal(authorizationError(ResourceType.Topic), ErrorCode.TopicAuthorizationFailed)
    assert.equal(authorizationError(ResourceType.Cluster), ErrorCode.ClusterAuthorizationFailed)
    assert.equal(
      authorizationError(ResourceType.TransactionalId),
      ErrorCode.TransactionalIdAuthorizationFailed,
    )
    assert.equal(
      authorizationError(ResourceType.DelegationToken),
      ErrorCode.DelegationTokenAuthorizationFailed,
    )
  })
})

describe('authorized operations', () => {
  test("Kafka's 32-bit field", () => {
    assert.equal(to32BitField([AclOperation.Read, AclOperation.Describe]), (1 << 3) | (1 << 8))
    assert.deepEqual(from32BitField(to32BitField([AclOperation.Write, AclOperation.Alter])), [
      AclOperation.Write,
      AclOperation.Alter,
    ])
    assert.equal(AUTHORIZED_OPERATIONS_OMITTED, -(2 ** 31))
  })

  test('without an authorizer: every supported operation', () => {
    const topic = authorizedOperations(null, alice, ResourceType.Topic, 'orders')
    assert.deepEqual(from32BitField(topic).sort(), [...SUPPORTED_OPERATIONS.get(ResourceType.Topic)!].sort())
  })

  test('READ gives READ and the DESCRIBE it implies; ALL gives every supported one', () => {
    const read = authorizedOperations(authorizer([{}]), alice, ResourceType.Topic, 'orders')
    assert.deepEqual(from32BitField(read), [AclOperation.Read, AclOperation.Describe])
    const all = authorizedOperations(
      authorizer([{ operation: AclOperation.All }]),
      alice,
      ResourceType.Topic,
      'orders',
    )
    assert.equal(all, to32BitField(SUPPORTED_OPERATIONS.get(ResourceType.Topic)!))
  })

  test('cluster operations need DESCRIBE on the cluster, else 0', () => {
    const cluster = { resourceType: ResourceType.Cluster, resourceName: 'kafka-cluster' }
    assert.equal(
      clusterAuthorizedOperations(authorizer([{ ...cluster, operation: AclOperation.Create }]), alice),
      0,
    )
    const withDescribe = authorizer([{ ...cluster, operation: AclOperation.Alter }])
    assert.deepEqual(from32BitField(clusterAuthorizedOperations(withDescribe, alice)), [
      AclOperation.Alter,
      AclOperation.Describe,
    ])
  })
})

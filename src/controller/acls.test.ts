import assert from 'node:assert/strict'
import { test } from 'node:test'
import { SeededRandom } from '../io/index.ts'
import { EMPTY_IMAGE } from '../metadata/index.ts'
import { ErrorCode, metadataRecordTypes as T } from '../protocol/index.ts'
import {
  AclOperation,
  AclPermissionType,
  ANY_ACL_FILTER,
  PatternType,
  ResourceType,
} from '../security/index.ts'
import { createAcls, deleteAcls } from './acls.ts'
import { commit } from './testing.ts'

const creation = (principal: string, resourceName = 't', operation: number = AclOperation.Read) => ({
  resourceType: ResourceType.Topic,
  resourceName,
  resourcePatternType: PatternType.Literal,
  principal,
  host: '*',
  operation,
  permissionType: AclPermissionType.Allow,
})

test('CreateAcls: a record per new ACL with a fresh id; equal ACLs, held or in the same request, add nothing', () => {
  const random = new SeededRandom(1)
  const first = createAcls(EMPTY_IMAGE, random, [creation('User:alice'), creation('User:alice')])
  assert.deepEqual(
    first.response.results?.map((r) => r.errorCode),
    [ErrorCode.None, ErrorCode.None],
  )
  assert.equal(first.records.length, 1)
  assert.equal(first.records[0]!.type, T.AccessControlEntry)
  const image = commit(EMPTY_IMAGE, first.records)
  assert.equal(image.acls.size, 1)
  const again = createAcls(image, random, [creation('User:alice'), creation('User:bob')])
  assert.equal(again.records.length, 1)
  const next = commit(image, again.records)
  assert.deepEqual([...next.acls.values()].map((a) => a.principal).sort(), ['User:alice', 'User:bob'])
})

test("CreateAcls: Kafka's validateNewAcl refusals fail only their creation", () => {
  const d = createAcls(EMPTY_IMAGE, new SeededRandom(2), [
    creation('alice'),
    creation('User:bob', ''),
    { ...creation('User:carol'), resourcePatternType: PatternType.Match },
    creation('User:dave'),
  ])
  assert.deepEqual(d.response.results, [
    {
      errorCode: ErrorCode.InvalidRequest,
      errorMessage:
        'Could not parse principal from `alice` (no colon is present separating the principal type from the principal name)',
    },
    { errorCode: ErrorCode.InvalidRequest, errorMessage: 'Resource name should not be empty' },
    { errorCode: ErrorCode.InvalidRequest, errorMessage: 'Invalid patternType MATCH' },
    { errorCode: ErrorCode.None, errorMessage: null },
  ])
  assert.equal(d.records.length, 1)
})

test('DeleteAcls: each filter lists what it matches; an ACL matched twice is removed once', () => {
  const random = new SeededRandom(3)
  const created = createAcls(EMPTY_IMAGE, random, [
    creation('User:alice'),
    creation('User:bob'),
    creation('User:alice', 'u', AclOperation.Write),
  ])
  const image = commit(EMPTY_IMAGE, created.records)
  const alice = { ...ANY_ACL_FILTER, principal: 'User:alice' }
  const onT = { ...ANY_ACL_FILTER, resourceName: 't' }
  const d = deleteAcls(image, [alice, onT])
  const names = d.response.filterResults?.map((f) =>
    f.matchingAcls?.map((a) => `${a.principal}@${a.resourceName}`).sort(),
  )
  assert.deepEqual(names, [
    ['User:alice@t', 'User:alice@u'],
    ['User:alice@t', 'User:bob@t'],
  ])
  assert.equal(d.records.length, 3)
  assert.equal(commit(image, d.records).acls.size, 0)
  const none = deleteAcls(commit(image, d.records), [alice])
  assert.deepEqual(none.response.filterResults, [
    { errorCode: ErrorCode.None, errorMessage: null, matchingAcls: [] },
  ])
  assert.equal(none.records.length, 0)
})

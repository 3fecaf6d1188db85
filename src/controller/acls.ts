/**
 * CreateAcls and DeleteAcls as Kafka's AclControlManager decides them: each new ACL gets a fresh
 * random id in an AccessControlEntryRecord, an ACL equal to one held (or to one earlier in the same
 * request) answers success without a record; each DeleteAcls filter removes every matching ACL
 * with a RemoveAccessControlEntryRecord. The checks of the broker's AclApis (SECURITY_DISABLED, the
 * CLUSTER name, an empty name) are the handler's; these are the controller's own.
 */

import type { Random } from '../io/index.ts'
import type { AclEntry, MetadataImage } from '../metadata/index.ts'
import type { Uuid } from '../model/index.ts'
import {
  type CreateAclsRequestData,
  type CreateAclsResponseData,
  type DeleteAclsResponseData,
  ErrorCode,
  metadataRecordTypes as T,
} from '../protocol/index.ts'
import {
  ACLS_PER_DELETE_MAX,
  type AclBindingFilter,
  type AclError,
  AclOperation,
  AclPermissionType,
  aclFilterMatches,
  aclFromCreation,
  aclFromRecord,
  aclKey,
  aclOperationName,
  aclToRecord,
  filterIsUnknown,
  PatternType,
  patternTypeName,
  permissionTypeName,
  ResourceType,
  resourceTypeName,
  type StandardAcl,
  TOO_MANY_ACLS_TO_DELETE,
} from '../security/index.ts'
import { type Decision, type PendingRecord, pendingRecord, randomUuid } from './decision.ts'

type AclCreationResult = CreateAclsResponseData.AclCreationResultIn
type DeleteAclsFilterResult = DeleteAclsResponseData.DeleteAclsFilterResultIn

/** The most records one CreateAcls may write (Kafka's MAX_RECORDS_PER_USER_OP, as for DeleteAcls). */
export const ACLS_PER_CREATE_MAX = ACLS_PER_DELETE_MAX

const SUCCESS: AclError = { errorCode: ErrorCode.None, message: null }

function invalid(message: string): AclError {
  return { errorCode: ErrorCode.InvalidRequest, message }
}

/** Kafka's AclControlManager.validateNewAcl: the first problem of a new ACL, or null. */
export function newAclProblem(acl: StandardAcl): AclError | null {
  if (acl.resourceType === ResourceType.Unknown || acl.resourceType === ResourceType.Any)
    return invalid(`Invalid resourceType ${resourceTypeName(acl.resourceType)}`)
  if (acl.patternType !== PatternType.Literal && acl.patternType !== PatternType.Prefixed)
    return invalid(`Invalid patternType ${patternTypeName(acl.patternType)}`)
  if (acl.operation === AclOperation.Unknown || acl.operation === AclOperation.Any)
    return invalid(`Invalid operation ${aclOperationName(acl.operation)}`)
  if (acl.permissionType !== AclPermissionType.Allow && acl.permissionType !== AclPermissionType.Deny)
    return invalid(`Invalid permissionType ${permissionTypeName(acl.permissionType)}`)
  if (acl.resourceName === '') return invalid('Resource name should not be empty')
  if (!acl.principal.includes(':')) {
    return invalid(
      `Could not parse principal from \`${acl.principal}\` (no colon is present separating the principal type from the principal name)`,
    )
  }
  return null
}

/** The keys of the ACLs an image holds, for refusing duplicates. */
function heldKeys(image: MetadataImage): Set<string> {
  const keys = new Set<string>()
  for (const entry of image.acls.values()) keys.add(aclKey(aclFromRecord(entry).acl))
  return keys
}

/** An id no ACL holds (Kafka's newAclId). */
function newAclId(image: MetadataImage, random: Random, taken: ReadonlySet<Uuid>): Uuid {
  for (;;) {
    const id = randomUuid(random)
    if (!image.acls.has(id) && !taken.has(id)) return id
  }
}

function errorResult(error: AclError): AclCreationResult {
  return { errorCode: error.errorCode, errorMessage: error.message }
}

/**
 * CreateAcls: one result per creation, in order. More than ACLS_PER_CREATE_MAX records fail every
 * creation, as Kafka's BoundedListTooLongException does (UNKNOWN_SERVER_ERROR, no message).
 */
export function createAcls(
  image: MetadataImage,
  random: Random,
  creations: readonly CreateAclsRequestData.AclCreation[],
): Decision<CreateAclsResponseData.CreateAclsResponseIn> {
  const held = heldKeys(image)
  const ids = new Set<Uuid>()
  const records: PendingRecord[] = []
  const results: AclCreationResult[] = []
  for (const creation of creations) {
    const acl = aclFromCreation(creation)
    const problem = newAclProblem(acl)
    if (problem !== null) {
      results.push(errorResult(problem))
      continue
    }
    const key = aclKey(acl)
    if (!held.has(key)) {
      held.add(key)
      const id = newAclId(image, random, ids)
      ids.add(id)
      records.push(pendingRecord(T.AccessControlEntry, 0, aclToRecord(id, acl)))
    }
    results.push(errorResult(SUCCESS))
  }
  if (records.length > ACLS_PER_CREATE_MAX) {
    return { records: [], response: { results: creations.map(() => errorResult(TOO_MANY_ACLS_TO_DELETE)) } }
  }
  return { records, response: { results } }
}

/** Kafka's AclControlManager.validateFilter. */
function filterProblem(filter: AclBindingFilter): AclError | null {
  if (!filterIsUnknown(filter)) return null
  const patternUnknown =
    filter.resourceType === ResourceType.Unknown || filter.patternType === PatternType.Unknown
  return invalid(patternUnknown ? 'Unknown patternFilter.' : 'Unknown entryFilter.')
}

function matchingAcl(entry: AclEntry): DeleteAclsResponseData.DeleteAclsMatchingAclIn {
  return {
    errorCode: ErrorCode.None,
    errorMessage: null,
    resourceType: entry.resourceType,
    resourceName: entry.resourceName,
    patternType: entry.patternType,
    principal: entry.principal,
    host: entry.host,
    operation: entry.operation,
    permissionType: entry.permissionType,
  }
}

/**
 * DeleteAcls: per filter, the ACLs it matches, each removed once however many filters match it.
 * Matching more than ACLS_PER_DELETE_MAX fails every filter and removes nothing (Kafka refuses
 * partial results).
 */
export function deleteAcls(
  image: MetadataImage,
  filters: readonly AclBindingFilter[],
): Decision<DeleteAclsResponseData.DeleteAclsResponseIn> {
  const removed = new Set<Uuid>()
  const filterResults: DeleteAclsFilterResult[] = []
  for (const filter of filters) {
    const problem = filterProblem(filter)
    if (problem !== null) {
      filterResults.push({ errorCode: problem.errorCode, errorMessage: problem.message, matchingAcls: [] })
      continue
    }
    const matching: AclEntry[] = []
    for (const entry of image.acls.values()) {
      if (!aclFilterMatches(filter, aclFromRecord(entry).acl)) continue
      matching.push(entry)
      removed.add(entry.id)
    }
    if (removed.size > ACLS_PER_DELETE_MAX) {
      const tooMany = { errorCode: TOO_MANY_ACLS_TO_DELETE.errorCode, errorMessage: null, matchingAcls: [] }
      return { records: [], response: { filterResults: filters.map(() => tooMany) } }
    }
    filterResults.push({
      errorCode: ErrorCode.None,
      errorMessage: null,
      matchingAcls: matching.map(matchingAcl),
    })
  }
  const records = [...removed].map((id) => pendingRecord(T.RemoveAccessControlEntry, 0, { id }))
  return { records, response: { filterResults } }
}

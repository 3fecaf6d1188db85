/**
 * What Kafka refuses in CreateAcls, DescribeAcls and DeleteAcls, at each of its three stages:
 * parsing (an UNKNOWN code anywhere: Kafka fails to parse the request and closes the connection),
 * building the bindings (ANY or MATCH in a CreateAcls binding: every creation answers
 * UNKNOWN_SERVER_ERROR without a message, as for Kafka's IllegalArgumentException), and per binding
 * (INVALID_REQUEST for a CLUSTER name other than `kafka-cluster` or an empty name).
 */

import type {
  CreateAclsRequestData,
  DeleteAclsRequestData,
  DescribeAclsRequestData,
} from '../protocol/index.ts'
import { ErrorCode } from '../protocol/index.ts'
import {
  type AclBindingFilter,
  AclOperation,
  AclPermissionType,
  aclOperationFromCode,
  CLUSTER_RESOURCE_NAME,
  PatternType,
  patternTypeFromCode,
  patternTypeName,
  permissionTypeFromCode,
  ResourceType,
  resourceTypeFromCode,
  type StandardAcl,
} from './acl.ts'

type AclCreation = CreateAclsRequestData.AclCreation
type DeleteAclsFilter = DeleteAclsRequestData.DeleteAclsFilter
type DescribeAclsRequest = DescribeAclsRequestData.DescribeAclsRequest

/**
 * An error answered for one binding or filter (or for every one), with Kafka's message: null for
 * UNKNOWN_SERVER_ERROR, whose message Kafka never sends (ApiError.fromThrowable).
 */
export interface AclError {
  readonly errorCode: ErrorCode
  readonly message: string | null
}

/**
 * How Kafka answers a CreateAcls request it refuses as a whole: `malformed` when it fails to parse
 * it (the connection is closed, as for a request that does not decode), `every-creation` when
 * building the bindings throws (each result answers the same error).
 */
export type CreateAclsRefusal =
  | { readonly kind: 'malformed'; readonly message: string }
  | { readonly kind: 'every-creation'; readonly error: AclError; readonly reason: string }

/** The wire codes of one binding or filter, as the four enums read them. */
interface AclCodes {
  readonly resourceType: ResourceType
  readonly patternType: PatternType
  readonly operation: AclOperation
  readonly permissionType: AclPermissionType
}

function hasUnknown(codes: AclCodes): boolean {
  return (
    codes.resourceType === ResourceType.Unknown ||
    codes.patternType === PatternType.Unknown ||
    codes.operation === AclOperation.Unknown ||
    codes.permissionType === AclPermissionType.Unknown
  )
}

/** A CreateAcls creation as an ACL; the codes Kafka does not know become UNKNOWN. */
export function aclFromCreation(creation: AclCreation): StandardAcl {
  return {
    resourceType: resourceTypeFromCode(creation.resourceType),
    resourceName: creation.resourceName,
    patternType: patternTypeFromCode(creation.resourcePatternType),
    principal: creation.principal,
    host: creation.host,
    operation: aclOperationFromCode(creation.operation),
    permissionType: permissionTypeFromCode(creation.permissionType),
  }
}

/** Why Kafka cannot build this binding (CreateAclsRequest.aclBinding's constructors), or null. */
function bindingProblem(acl: StandardAcl): string | null {
  if (acl.resourceType === ResourceType.Any) return 'resourceType must not be ANY'
  if (acl.patternType === PatternType.Match || acl.patternType === PatternType.Any) {
    return `patternType must not be ${patternTypeName(acl.patternType)}`
  }
  if (acl.operation === AclOperation.Any) return 'operation must not be ANY'
  if (acl.permissionType === AclPermissionType.Any) return 'permissionType must not be ANY'
  return null
}

/** Kafka's refusal of a CreateAcls request as a whole, or null when each creation is judged alone. */
export function checkCreateAclsRequest(creations: readonly AclCreation[]): CreateAclsRefusal | null {
  const acls = creations.map(aclFromCreation)
  if (acls.some(hasUnknown)) return { kind: 'malformed', message: 'CreatableAcls contain unknown elements' }
  for (const acl of acls) {
    const problem = bindingProblem(acl)
    if (problem !== null) {
      return {
        kind: 'every-creation',
        error: { errorCode: ErrorCode.UnknownServerError, message: null },
        reason: problem,
      }
    }
  }
  return null
}

/** Kafka's per-binding check of a creation (AclApis.handleCreateAcls): null when it may be created. */
export function validateAclCreation(acl: StandardAcl): AclError | null {
  if (acl.resourceType === ResourceType.Cluster && acl.resourceName !== CLUSTER_RESOURCE_NAME) {
    const message = `The only valid name for the CLUSTER resource is ${CLUSTER_RESOURCE_NAME}`
    return { errorCode: ErrorCode.InvalidRequest, message }
  }
  if (acl.resourceName === '')
    return { errorCode: ErrorCode.InvalidRequest, message: 'Invalid empty resource name' }
  return null
}

function filterFrom(fields: {
  resourceTypeFilter: number
  resourceNameFilter: string | null
  patternTypeFilter: number
  principalFilter: string | null
  hostFilter: string | null
  operation: number
  permissionType: number
}): AclBindingFilter {
  return {
    resourceType: resourceTypeFromCode(fields.resourceTypeFilter),
    resourceName: fields.resourceNameFilter,
    patternType: patternTypeFromCode(fields.patternTypeFilter),
    principal: fields.principalFilter,
    host: fields.hostFilter,
    operation: aclOperationFromCode(fields.operation),
    permissionType: permissionTypeFromCode(fields.permissionType),
  }
}

/** A DescribeAcls request's filter, or the reason Kafka fails to parse it (and closes the connection). */
export function describeAclsFilter(
  request: DescribeAclsRequest,
): AclBindingFilter | { readonly malformed: string } {
  const filter = filterFrom(request)
  return hasUnknown(filter) ? { malformed: 'DescribeAclsRequest contains UNKNOWN elements' } : filter
}

/** A DeleteAcls request's filters, or the reason Kafka fails to parse it (and closes the connection). */
export function deleteAclsFilters(
  filters: readonly DeleteAclsFilter[],
): readonly AclBindingFilter[] | { readonly malformed: string } {
  const parsed = filters.map(filterFrom)
  return parsed.some(hasUnknown) ? { malformed: 'Filters contain UNKNOWN elements' } : parsed
}

/** The most ACLs one DeleteAcls may remove in Kafka (QuorumController's MAX_RECORDS_PER_USER_OP). */
export const ACLS_PER_DELETE_MAX = 10_000

/**
 * The error Kafka answers a DeleteAcls filter once the request's filters match more than
 * ACLS_PER_DELETE_MAX ACLs (its BoundedListTooLongException, sent without its message).
 */
export const TOO_MANY_ACLS_TO_DELETE: AclError = { errorCode: ErrorCode.UnknownServerError, message: null }

/** The ACLs of one resource pattern, as a DescribeAcls response lists them. */
export interface AclsOfPattern {
  readonly resourceType: ResourceType
  readonly resourceName: string
  readonly patternType: PatternType
  readonly acls: readonly Pick<StandardAcl, 'principal' | 'host' | 'operation' | 'permissionType'>[]
}

/**
 * ACLs grouped by resource pattern for a DescribeAcls response (Kafka's
 * DescribeAclsResponse.aclsResources), patterns and entries in the order given. Kafka lists them in
 * the order of a Java HashMap, which varies between runs; `acls(filter)` gives Kafka's ACL order.
 */
export function groupByPattern(acls: readonly StandardAcl[]): AclsOfPattern[] {
  const groups = new Map<string, { pattern: StandardAcl; acls: AclsOfPattern['acls'][number][] }>()
  for (const acl of acls) {
    const key = JSON.stringify([acl.resourceType, acl.resourceName, acl.patternType])
    let group = groups.get(key)
    if (group === undefined) {
      group = { pattern: acl, acls: [] }
      groups.set(key, group)
    }
    group.acls.push({
      principal: acl.principal,
      host: acl.host,
      operation: acl.operation,
      permissionType: acl.permissionType,
    })
  }
  return [...groups.values()].map(({ pattern, acls: entries }) => ({
    resourceType: pattern.resourceType,
    resourceName: pattern.resourceName,
    patternType: pattern.patternType,
    acls: entries,
  }))
}

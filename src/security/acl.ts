/**
 * Kafka's ACL vocabulary: resource types, operations, pattern types and permission types with the
 * codes CreateAcls, DescribeAcls, DeleteAcls and AccessControlEntryRecord carry (int8 on the wire,
 * Kafka's enums' `code()`), the ACL binding itself (`StandardAcl`), Kafka's order of ACLs, and the
 * binding filters of DescribeAcls and DeleteAcls with Kafka's matching.
 */
import type { Uuid } from '../model/index.ts'
import type { AccessControlEntryRecordData } from '../protocol/index.ts'

type AccessControlEntryRecord = AccessControlEntryRecordData.AccessControlEntryRecord

/** Kafka's `ResourceType` codes. UNKNOWN and ANY appear only in filters (and in refusals). */
export const ResourceType = {
  Unknown: 0,
  Any: 1,
  Topic: 2,
  Group: 3,
  Cluster: 4,
  TransactionalId: 5,
  DelegationToken: 6,
  User: 7,
} as const
export type ResourceType = (typeof ResourceType)[keyof typeof ResourceType]

/** Kafka's `AclOperation` codes. UNKNOWN and ANY appear only in filters. */
export const AclOperation = {
  Unknown: 0,
  Any: 1,
  All: 2,
  Read: 3,
  Write: 4,
  Create: 5,
  Delete: 6,
  Alter: 7,
  Describe: 8,
  ClusterAction: 9,
  DescribeConfigs: 10,
  AlterConfigs: 11,
  IdempotentWrite: 12,
  CreateTokens: 13,
  DescribeTokens: 14,
} as const
export type AclOperation = (typeof AclOperation)[keyof typeof AclOperation]

/** Kafka's `PatternType` codes. MATCH and ANY appear only in filters. */
export const PatternType = { Unknown: 0, Any: 1, Match: 2, Literal: 3, Prefixed: 4 } as const
export type PatternType = (typeof PatternType)[keyof typeof PatternType]

/** Kafka's `AclPermissionType` codes. ANY appears only in filters. */
export const AclPermissionType = { Unknown: 0, Any: 1, Deny: 2, Allow: 3 } as const
export type AclPermissionType = (typeof AclPermissionType)[keyof typeof AclPermissionType]

/** The one name a CLUSTER resource has (Kafka's `CLUSTER_NAME`). */
export const CLUSTER_RESOURCE_NAME = 'kafka-cluster'
/** A LITERAL resource name that matches every name of its type. */
export const WILDCARD_RESOURCE = '*'
/** The ACL host that matches every client address. */
export const WILDCARD_HOST = '*'

type KafkaEnumTable<T extends number> = { readonly Unknown: T } & Readonly<Record<string, T>>

/** Kafka's enum constant names by code: `TOPIC`, `DESCRIBE_CONFIGS`, ... */
const RESOURCE_TYPE_NAMES = enumNames(ResourceType)
const OPERATION_NAMES = enumNames(AclOperation)
const PATTERN_TYPE_NAMES = enumNames(PatternType)
const PERMISSION_TYPE_NAMES = enumNames(AclPermissionType)

function enumNames(table: Readonly<Record<string, number>>): ReadonlyMap<number, string> {
  const names = new Map<number, string>()
  for (const [key, code] of Object.entries(table))
    names.set(code, key.replace(/(?<=.)([A-Z])/g, '_$1').toUpperCase())
  return names
}

/** A wire code as Kafka's `fromCode`: a code it does not know is UNKNOWN. */
function fromCode<T extends number>(table: KafkaEnumTable<T>, code: number): T {
  return Object.values(table).find((known) => known === code) ?? table.Unknown
}

export function resourceTypeFromCode(code: number): ResourceType {
  return fromCode(ResourceType, code)
}
export function aclOperationFromCode(code: number): AclOperation {
  return fromCode(AclOperation, code)
}
export function patternTypeFromCode(code: number): PatternType {
  return fromCode(PatternType, code)
}
export function permissionTypeFromCode(code: number): AclPermissionType {
  return fromCode(AclPermissionType, code)
}

/** Kafka's enum name: `TOPIC`, `TRANSACTIONAL_ID`, as its messages print them. */
export function resourceTypeName(type: ResourceType): string {
  return RESOURCE_TYPE_NAMES.get(type)!
}
export function aclOperationName(operation: AclOperation): string {
  return OPERATION_NAMES.get(operation)!
}
export function patternTypeName(type: PatternType): string {
  return PATTERN_TYPE_NAMES.get(type)!
}
export function permissionTypeName(type: AclPermissionType): string {
  return PERMISSION_TYPE_NAMES.get(type)!
}

/**
 * A name as Kafka's SecurityUtils reads one (`kafka-acls`, configs): the Pascal-case name in any
 * case (`TransactionalId`, `transactionalid`, `TOPIC`); UNKNOWN otherwise, also for the enum name
 * with underscores (`TRANSACTIONAL_ID`), which Kafka's lookup does not know either.
 */
function fromName<T extends number>(
  table: KafkaEnumTable<T>,
  names: ReadonlyMap<number, string>,
  name: string,
): T {
  const upper = name.toUpperCase()
  const found = Object.values(table).find((code) => names.get(code)!.replaceAll('_', '') === upper)
  return found ?? table.Unknown
}

export function parseResourceType(name: string): ResourceType {
  return fromName(ResourceType, RESOURCE_TYPE_NAMES, name)
}
export function parseAclOperation(name: string): AclOperation {
  return fromName(AclOperation, OPERATION_NAMES, name)
}
export function parsePermissionType(name: string): AclPermissionType {
  return fromName(AclPermissionType, PERMISSION_TYPE_NAMES, name)
}

/**
 * One ACL binding, as Kafka's StandardAcl and AccessControlEntryRecord hold it: a resource pattern
 * (type, name, LITERAL or PREFIXED) and an entry (principal as `type:name`, host, operation,
 * ALLOW or DENY).
 */
export interface StandardAcl {
  readonly resourceType: ResourceType
  readonly resourceName: string
  readonly patternType: PatternType
  readonly principal: string
  readonly host: string
  readonly operation: AclOperation
  readonly permissionType: AclPermissionType
}

/** An ACL with the id its AccessControlEntryRecord gave it. */
export interface StandardAclWithId {
  readonly id: Uuid
  readonly acl: StandardAcl
}

/** The ACL a metadata record carries (Kafka's `StandardAclWithId.fromRecord`). */
export function aclFromRecord(record: AccessControlEntryRecord): StandardAclWithId {
  const acl: StandardAcl = {
    resourceType: resourceTypeFromCode(record.resourceType),
    resourceName: record.resourceName,
    patternType: patternTypeFromCode(record.patternType),
    principal: record.principal,
    host: record.host,
    operation: aclOperationFromCode(record.operation),
    permissionType: permissionTypeFromCode(record.permissionType),
  }
  return { id: record.id, acl }
}

/** The record that creates an ACL (Kafka's `StandardAclWithId.toRecord`). */
export function aclToRecord(id: Uuid, acl: StandardAcl): AccessControlEntryRecord {
  return { id, ...acl }
}

/** A text that is equal for equal ACLs (every field), for sets and maps of ACLs. */
export function aclKey(acl: StandardAcl): string {
  return JSON.stringify([
    acl.resourceType,
    acl.resourceName,
    acl.patternType,
    acl.principal,
    acl.host,
    acl.operation,
    acl.permissionType,
  ])
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

/**
 * Kafka's order of ACLs (StandardAcl.compareTo): resource type, then resource name in REVERSE, then
 * pattern type, operation, principal, host, permission type. DescribeAcls lists in this order.
 */
export function compareAcls(a: StandardAcl, b: StandardAcl): number {
  return (
    a.resourceType - b.resourceType ||
    compareText(b.resourceName, a.resourceName) ||
    a.patternType - b.patternType ||
    a.operation - b.operation ||
    compareText(a.principal, b.principal) ||
    compareText(a.host, b.host) ||
    a.permissionType - b.permissionType
  )
}

/**
 * A filter over ACL bindings (Kafka's AclBindingFilter), as DescribeAcls and DeleteAcls send it:
 * null name, principal or host match any; ANY matches any type, operation or permission; pattern
 * type MATCH matches every pattern that applies to the name (literal, wildcard, prefixes of it).
 */
export interface AclBindingFilter {
  readonly resourceType: ResourceType
  readonly resourceName: string | null
  readonly patternType: PatternType
  readonly principal: string | null
  readonly host: string | null
  readonly operation: AclOperation
  readonly permissionType: AclPermissionType
}

/** The filter that matches every ACL. */
export const ANY_ACL_FILTER: AclBindingFilter = {
  resourceType: ResourceType.Any,
  resourceName: null,
  patternType: PatternType.Any,
  principal: null,
  host: null,
  operation: AclOperation.Any,
  permissionType: AclPermissionType.Any,
}

/** Kafka's ResourcePatternFilter.matches. */
export function patternFilterMatches(filter: AclBindingFilter, acl: StandardAcl): boolean {
  if (filter.resourceType !== ResourceType.Any && filter.resourceType !== acl.resourceType) return false
  const anyPattern = filter.patternType === PatternType.Any
  if (!anyPattern && filter.patternType !== PatternType.Match && filter.patternType !== acl.patternType) {
    return false
  }
  const name = filter.resourceName
  if (name === null) return true
  if (anyPattern || filter.patternType === acl.patternType) return name === acl.resourceName
  if (acl.patternType === PatternType.Literal) {
    return name === acl.resourceName || acl.resourceName === WILDCARD_RESOURCE
  }
  return acl.patternType === PatternType.Prefixed && name.startsWith(acl.resourceName)
}

/** Kafka's AccessControlEntryFilter.matches. */
export function entryFilterMatches(filter: AclBindingFilter, acl: StandardAcl): boolean {
  if (filter.principal !== null && filter.principal !== acl.principal) return false
  if (filter.host !== null && filter.host !== acl.host) return false
  if (filter.operation !== AclOperation.Any && filter.operation !== acl.operation) return false
  return filter.permissionType === AclPermissionType.Any || filter.permissionType === acl.permissionType
}

/** Kafka's AclBindingFilter.matches: the pattern filter and the entry filter. */
export function aclFilterMatches(filter: AclBindingFilter, acl: StandardAcl): boolean {
  return patternFilterMatches(filter, acl) && entryFilterMatches(filter, acl)
}

/** Kafka's AclBindingFilter.isUnknown: a filter with an UNKNOWN field matches nothing Kafka accepts. */
export function filterIsUnknown(filter: AclBindingFilter): boolean {
  return (
    filter.resourceType === ResourceType.Unknown ||
    filter.patternType === PatternType.Unknown ||
    filter.operation === AclOperation.Unknown ||
    filter.permissionType === AclPermissionType.Unknown
  )
}

/**
 * Kafka's AclBindingFilter.findIndefiniteField: why the filter could match more than one binding
 * (`Resource type is ANY.`, `Principal is NULL`, ...), or null when it names exactly one.
 */
export function findIndefiniteField(filter: AclBindingFilter): string | null {
  const checks: readonly [boolean, string][] = [
    [filter.resourceType === ResourceType.Any, 'Resource type is ANY.'],
    [filter.resourceType === ResourceType.Unknown, 'Resource type is UNKNOWN.'],
    [filter.resourceName === null, 'Resource name is NULL.'],
    [filter.patternType === PatternType.Match, 'Resource pattern type is MATCH.'],
    [filter.patternType === PatternType.Unknown, 'Resource pattern type is UNKNOWN.'],
    [filter.principal === null, 'Principal is NULL'],
    [filter.host === null, 'Host is NULL'],
    [filter.operation === AclOperation.Any, 'Operation is ANY'],
    [filter.operation === AclOperation.Unknown, 'Operation is UNKNOWN'],
    [filter.permissionType === AclPermissionType.Any, 'Permission type is ANY'],
    [filter.permissionType === AclPermissionType.Unknown, 'Permission type is UNKNOWN'],
  ]
  return checks.find(([indefinite]) => indefinite)?.[1] ?? null
}

/** The filter that matches exactly this ACL (Kafka's AclBinding.toFilter). */
export function aclToFilter(acl: StandardAcl): AclBindingFilter {
  return { ...acl }
}

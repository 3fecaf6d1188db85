/**
 * Kafka's StandardAuthorizer, as a pure class over the ACLs the metadata log holds (each
 * AccessControlEntryRecord: an id and a StandardAcl). `authorize` answers ALLOWED or DENIED with
 * Kafka's rules: super users may do anything; a matching DENY wins over any ALLOW; ACLs match the
 * principal or `User:*`, the host or `*`, the literal name, the literal `*` or any prefix pattern of
 * the name; ALLOW of READ, WRITE, DELETE or ALTER implies DESCRIBE, ALLOW of ALTER_CONFIGS implies
 * DESCRIBE_CONFIGS, ALL matches every operation; and with no ACL at all on the resource, the answer
 * is `allow.everyone.if.no.acl.found`.
 */
import type { Uuid } from '../model/index.ts'
import {
  type AclBindingFilter,
  AclOperation,
  AclPermissionType,
  aclFilterMatches,
  aclKey,
  compareAcls,
  PatternType,
  ResourceType,
  type StandardAcl,
  type StandardAclWithId,
  WILDCARD_HOST,
  WILDCARD_RESOURCE,
} from './acl.ts'
import { type AclBucket, ResourceTypeIndex } from './acl-index.ts'
import { formatPrincipal, type KafkaPrincipal, parsePrincipal, WILDCARD_PRINCIPAL } from './principal.ts'

export type AuthorizationResult = 'ALLOWED' | 'DENIED'

/** Who asks: the connection's principal and its client address as Java prints it (`javaHostAddress`). */
export interface AuthorizationContext {
  readonly principal: KafkaPrincipal
  readonly host: string
}

/** What is asked: an operation on one resource, named literally (Kafka's Action). */
export interface Action {
  readonly operation: AclOperation
  readonly resourceType: ResourceType
  readonly resourceName: string
}

/** `super.users` and `allow.everyone.if.no.acl.found`, read by `authorizerConfig`. */
export interface AuthorizerConfig {
  /** Principal texts (`User:admin`) that may do anything. */
  readonly superUsers: readonly string[]
  readonly allowEveryoneIfNoAclFound: boolean
}

/** `super.users` as Kafka reads it: `;`-separated principals, trimmed, empty entries skipped; each must be `type:name`. */
export function parseSuperUsers(value: string | undefined): string[] {
  if (value === undefined) return []
  const users = value.split(';').map((user) => user.trim())
  const nonEmpty = users.filter((user) => user !== '')
  for (const user of nonEmpty) parsePrincipal(user)
  return nonEmpty
}

/** The two authorizer keys as Kafka reads them (Boolean.parseBoolean: only `true`, in any case, is true). */
export function authorizerConfig(values: {
  readonly superUsers?: string | undefined
  readonly allowEveryoneIfNoAclFound?: string | undefined
}): AuthorizerConfig {
  return {
    superUsers: parseSuperUsers(values.superUsers),
    allowEveryoneIfNoAclFound: values.allowEveryoneIfNoAclFound?.trim().toLowerCase() === 'true',
  }
}

/** A misuse of the authorizer: an id twice, an id it does not hold, ANY or UNKNOWN where a type is needed. */
export class AuthorizerStateError extends Error {
  override name = 'AuthorizerStateError'
}

/** The operations an ALLOW of each implies beyond itself: READ, WRITE, DELETE, ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS. */
const IMPLIES_DESCRIBE: ReadonlySet<AclOperation> = new Set([
  AclOperation.Describe,
  AclOperation.Read,
  AclOperation.Write,
  AclOperation.Delete,
  AclOperation.Alter,
])
const IMPLIES_DESCRIBE_CONFIGS: ReadonlySet<AclOperation> = new Set([
  AclOperation.DescribeConfigs,
  AclOperation.AlterConfigs,
])

/** Whether an ACL's operation covers the asked one (Kafka's StandardAuthorizerData.findResult). */
function operationMatches(acl: StandardAcl, asked: AclOperation): boolean {
  if (acl.operation === AclOperation.All) return true
  if (acl.permissionType !== AclPermissionType.Allow) return acl.operation === asked
  if (asked === AclOperation.Describe) return IMPLIES_DESCRIBE.has(acl.operation)
  if (asked === AclOperation.DescribeConfigs) return IMPLIES_DESCRIBE_CONFIGS.has(acl.operation)
  return acl.operation === asked
}

/** The result of one ACL already known to name the principal, or null when it does not apply. */
function aclResult(acl: StandardAcl, host: string, asked: AclOperation): AuthorizationResult | null {
  if (acl.host !== WILDCARD_HOST && acl.host !== host) return null
  if (!operationMatches(acl, asked)) return null
  return acl.permissionType === AclPermissionType.Allow ? 'ALLOWED' : 'DENIED'
}

/** The principal texts an ACL may name to apply to this principal: its own and `User:*`. */
function principalKeys(principal: KafkaPrincipal): readonly string[] {
  const own = formatPrincipal(principal)
  return own === WILDCARD_PRINCIPAL ? [own] : [own, WILDCARD_PRINCIPAL]
}

export class StandardAuthorizer {
  readonly #superUsers: ReadonlySet<string>
  readonly #noAclResult: AuthorizationResult
  readonly #byId = new Map<Uuid, StandardAcl>()
  readonly #idByKey = new Map<string, Uuid>()
  readonly #byType = new Map<ResourceType, ResourceTypeIndex>()

  constructor(config: AuthorizerConfig, acls: Iterable<StandardAclWithId> = []) {
    this.#superUsers = new Set(config.superUsers)
    this.#noAclResult = config.allowEveryoneIfNoAclFound ? 'ALLOWED' : 'DENIED'
    for (const { id, acl } of acls) this.addAcl(id, acl)
  }

  get aclCount(): number {
    return this.#byId.size
  }

  getAcl(id: Uuid): StandardAcl | undefined {
    return this.#byId.get(id)
  }

  /** The id of an equal ACL, if one is held (CreateAcls of an existing ACL adds nothing). */
  idOf(acl: StandardAcl): Uuid | undefined {
    return this.#idByKey.get(aclKey(acl))
  }

  /** Adds an ACL (an AccessControlEntryRecord); an id or an equal ACL already held is refused, as Kafka's AclCache does. */
  addAcl(id: Uuid, acl: StandardAcl): void {
    if (this.#byId.has(id)) throw new AuthorizerStateError(`An ACL with ID ${id} already exists.`)
    const key = aclKey(acl)
    if (this.#idByKey.has(key))
      throw new AuthorizerStateError(`Unable to add the ACL with ID ${id} to aclsByResource`)
    this.#byId.set(id, acl)
    this.#idByKey.set(key, id)
    this.#indexOf(acl.resourceType).add(acl)
  }

  /** Removes an ACL by id (a RemoveAccessControlEntryRecord). */
  removeAcl(id: Uuid): void {
    const acl = this.#byId.get(id)
    if (acl === undefined) throw new AuthorizerStateError(`ID ${id} not found in aclsById.`)
    this.#byId.delete(id)
    this.#idByKey.delete(aclKey(acl))
    this.#byType.get(acl.resourceType)!.remove(acl)
  }

  #indexOf(type: ResourceType): ResourceTypeIndex {
    let index = this.#byType.get(type)
    if (index === undefined) {
      index = new ResourceTypeIndex()
      this.#byType.set(type, index)
    }
    return index
  }

  isSuperUser(principal: KafkaPrincipal): boolean {
    return this.#superUsers.has(formatPrincipal(principal))
  }

  authorize(context: AuthorizationContext, action: Action): AuthorizationResult {
    if (this.isSuperUser(context.principal)) return 'ALLOWED'
    const buckets = this.#byType.get(action.resourceType)?.bucketsMatching(action.resourceName) ?? []
    const keys = principalKeys(context.principal)
    let allowed = false
    for (const bucket of buckets) {
      const result = bucketResult(bucket, keys, context.host, action.operation)
      if (result === 'DENIED') return 'DENIED'
      allowed ||= result === 'ALLOWED'
    }
    if (allowed) return 'ALLOWED'
    return buckets.length > 0 ? 'DENIED' : this.#noAclResult
  }

  authorizeAll(context: AuthorizationContext, actions: readonly Action[]): AuthorizationResult[] {
    return actions.map((action) => this.authorize(context, action))
  }

  /**
   * Kafka's Authorizer.authorizeByResourceType: whether the principal may do the operation on at
   * least one resource of the type, so on some name no DENY covers (InitProducerId without a
   * transactional id falls back to WRITE on any topic). Implied operations do not count here, as
   * in Kafka; ALL does.
   */
  authorizeByResourceType(
    context: AuthorizationContext,
    operation: AclOperation,
    type: ResourceType,
  ): AuthorizationResult {
    checkByResourceTypeArgs(operation, type)
    if (this.authorize(context, { operation, resourceType: type, resourceName: 'hardcode' }) === 'ALLOWED') {
      return 'ALLOWED'
    }
    const index = this.#byType.get(type)
    if (index === undefined) return 'DENIED'
    const patterns = new PatternSets()
    for (const key of principalKeys(context.principal)) {
      for (const acl of index.forPrincipal(key)) {
        if (!patterns.add(acl, context.host, operation)) return 'DENIED'
      }
    }
    return patterns.anyAllowNotDenied() ? 'ALLOWED' : 'DENIED'
  }

  /**
   * The ACLs a DescribeAcls or DeleteAcls filter matches, in Kafka's order (`compareAcls`). A filter
   * naming a type and a resource reads only the patterns that can match it; others read every ACL.
   */
  acls(filter: AclBindingFilter): StandardAclWithId[] {
    const candidates = this.#candidates(filter) ?? this.#byId.values()
    const matched: StandardAcl[] = []
    for (const acl of candidates) if (aclFilterMatches(filter, acl)) matched.push(acl)
    matched.sort(compareAcls)
    return matched.map((acl) => ({ id: this.#idByKey.get(aclKey(acl))!, acl }))
  }

  #candidates(filter: AclBindingFilter): StandardAcl[] | null {
    const name = filter.resourceName
    if (name === null) return null
    const types = filter.resourceType === ResourceType.Any ? [...this.#byType.keys()] : [filter.resourceType]
    const out: StandardAcl[] = []
    for (const type of types) {
      const index = this.#byType.get(type)
      if (index !== undefined)
        for (const bucket of filterBuckets(index, name, filter.patternType)) out.push(...bucket.all())
    }
    return out
  }
}

/** The buckets a filter on this name can match, by its pattern type. */
function filterBuckets(index: ResourceTypeIndex, name: string, patternType: PatternType): AclBucket[] {
  if (patternType === PatternType.Match) return index.bucketsMatching(name)
  const out: AclBucket[] = []
  for (const type of [PatternType.Literal, PatternType.Prefixed]) {
    if (patternType !== PatternType.Any && patternType !== type) continue
    const bucket = index.bucketOf(name, type)
    if (bucket !== undefined) out.push(bucket)
  }
  return out
}

function bucketResult(
  bucket: AclBucket,
  keys: readonly string[],
  host: string,
  operation: AclOperation,
): AuthorizationResult | null {
  let allowed = false
  for (const key of keys) {
    for (const acl of bucket.forPrincipal(key)) {
      const result = aclResult(acl, host, operation)
      if (result === 'DENIED') return 'DENIED'
      allowed ||= result === 'ALLOWED'
    }
  }
  return allowed ? 'ALLOWED' : null
}

function checkByResourceTypeArgs(operation: AclOperation, type: ResourceType): void {
  if (type === ResourceType.Any)
    throw new AuthorizerStateError('Must specify a non-filter resource type for authorizeByResourceType')
  if (type === ResourceType.Unknown) throw new AuthorizerStateError('Unknown resource type')
  if (operation === AclOperation.Any)
    throw new AuthorizerStateError('Must specify a non-filter operation type for authorizeByResourceType')
  if (operation === AclOperation.Unknown) throw new AuthorizerStateError('Unknown operation type')
}

/** The allowed and denied names of authorizeByResourceType, by pattern type. */
class PatternSets {
  readonly #allowLiteral = new Set<string>()
  readonly #allowPrefixed = new Set<string>()
  readonly #denyLiteral = new Set<string>()
  readonly #denyPrefixed = new Set<string>()
  #wildcardAllow = false

  /** Takes in one ACL of the principal; false when it is a wildcard DENY, which denies at once. */
  add(acl: StandardAcl, host: string, operation: AclOperation): boolean {
    if (acl.host !== host && acl.host !== WILDCARD_HOST) return true
    if (acl.operation !== operation && acl.operation !== AclOperation.All) return true
    const literal = acl.patternType === PatternType.Literal
    if (!literal && acl.patternType !== PatternType.Prefixed) return true
    if (acl.permissionType === AclPermissionType.Deny) {
      if (literal && acl.resourceName === WILDCARD_RESOURCE) return false
      ;(literal ? this.#denyLiteral : this.#denyPrefixed).add(acl.resourceName)
    } else if (acl.permissionType === AclPermissionType.Allow) {
      if (literal && acl.resourceName === WILDCARD_RESOURCE) this.#wildcardAllow = true
      else (literal ? this.#allowLiteral : this.#allowPrefixed).add(acl.resourceName)
    }
    return true
  }

  /** Whether some allowed pattern has no DENY dominating it (Kafka's check, a prefix at a time). */
  anyAllowNotDenied(): boolean {
    if (this.#wildcardAllow) return true
    for (const name of this.#allowLiteral)
      if (!this.#denyLiteral.has(name) && !this.#prefixDenied(name)) return true
    for (const name of this.#allowPrefixed) if (!this.#prefixDenied(name)) return true
    return false
  }

  /** Whether a DENY prefix of at least one character starts this name. */
  #prefixDenied(name: string): boolean {
    for (let end = 1; end <= name.length; end++) if (this.#denyPrefixed.has(name.slice(0, end))) return true
    return false
  }
}

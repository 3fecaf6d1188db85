/**
 * The ACL checks handlers make, over the authorizer the dispatcher put on the request context
 * (`ctx.authorizer`, the node's current StandardAuthorizer, or null without `authorizer.class.name`:
 * then everything is allowed and nothing is computed). The operations and errors of each API are
 * Kafka's (security/api-authorizations.ts); the handler only says which names it asks about.
 */
import { ErrorCode, errorInfo } from '../protocol/index.ts'
import {
  AclOperation,
  ANONYMOUS_PRINCIPAL,
  API_AUTHORIZATIONS,
  type AuthorizationContext,
  authorizationError,
  authorizedOperations,
  CLUSTER_RESOURCE_NAME,
  clusterAuthorizedOperations,
  javaHostAddress,
  ResourceType,
  type StandardAuthorizer,
} from '../security/index.ts'
import type { RequestContext } from './handler.ts'

export { AclOperation, ResourceType }

/** Who asks, as the authorizer takes it: the principal and the client's host as Java prints it. */
export function authorizationContext(ctx: RequestContext): AuthorizationContext {
  const address = ctx.clientAddress
  const colon = address.lastIndexOf(':')
  const host = colon < 0 ? address : address.slice(0, colon)
  return { principal: ctx.principal, host: javaHostAddress(host) }
}

/** One request's checks: made once per request, each name asked once. */
export interface RequestAuthorization {
  /** Whether the principal may do `operation` on the resource (always, without an authorizer). */
  allowed(operation: AclOperation, resourceType: ResourceType, name: string): boolean
  /** `allowed` on the cluster resource. */
  cluster(operation: AclOperation): boolean
  /** Kafka's authorizeByResourceType: the operation on at least one resource of the type. */
  anyOfType(operation: AclOperation, resourceType: ResourceType): boolean
  /** A resource's authorized operations bitfield (Kafka's AuthHelper.authorizedOperations). */
  operations(resourceType: ResourceType, name: string): number
  /** The cluster's, as Metadata v8-v10 and DescribeCluster report them: 0 without DESCRIBE on it. */
  clusterOperations(): number
  /** The authorizer; null without one (everything allowed). */
  readonly authorizer: StandardAuthorizer | null
}

/** Unused without an authorizer: every supported operation is authorized. */
const NO_CONTEXT: AuthorizationContext = { principal: ANONYMOUS_PRINCIPAL, host: '' }

const ALLOW_ALL: RequestAuthorization = {
  allowed: () => true,
  cluster: () => true,
  anyOfType: () => true,
  operations: (resourceType, name) => authorizedOperations(null, NO_CONTEXT, resourceType, name),
  clusterOperations: () => clusterAuthorizedOperations(null, NO_CONTEXT),
  authorizer: null,
}

/** The checks of one request; without an authorizer a shared allow-all, so the hot path pays nothing. */
export function authorize(ctx: RequestContext): RequestAuthorization {
  const authorizer = ctx.authorizer ?? null
  if (authorizer === null) return ALLOW_ALL
  const context = authorizationContext(ctx)
  const cache = new Map<string, boolean>()
  const allowed = (operation: AclOperation, resourceType: ResourceType, name: string): boolean => {
    const key = `${operation}\u0000${resourceType}\u0000${name}`
    let result = cache.get(key)
    if (result === undefined) {
      result = authorizer.authorize(context, { operation, resourceType, resourceName: name }) === 'ALLOWED'
      cache.set(key, result)
    }
    return result
  }
  return {
    allowed,
    cluster: (operation) => allowed(operation, ResourceType.Cluster, CLUSTER_RESOURCE_NAME),
    anyOfType: (operation, resourceType) =>
      authorizer.authorizeByResourceType(context, operation, resourceType) === 'ALLOWED',
    operations: (resourceType, name) => authorizedOperations(authorizer, context, resourceType, name),
    clusterOperations: () => clusterAuthorizedOperations(authorizer, context),
    authorizer,
  }
}

/** The error of a denial on a resource of this type (TOPIC_AUTHORIZATION_FAILED, ...). */
export function deniedError(resourceType: ResourceType): ErrorCode {
  return authorizationError(resourceType)
}

/**
 * A batch API whose allowed items a controller decides: `decide` gets the allowed items (it is not
 * called when none is), the denied ones answer `denied(item)` after its results, as Kafka's
 * ControllerApis appends its authorization errors to the controller's response.
 */
export async function decideAllowed<T, R>(
  items: readonly T[],
  allowed: (item: T) => boolean,
  decide: (allowed: readonly T[]) => Promise<readonly R[]>,
  denied: (item: T) => R,
): Promise<R[]> {
  const ok = items.filter(allowed)
  const refused = ok.length === items.length ? [] : items.filter((item) => !allowed(item))
  const decided = ok.length === 0 && refused.length > 0 ? [] : await decide(ok)
  return [...decided, ...refused.map(denied)]
}

/** Kafka's refusal of a request that needs an operation on the cluster, with the error's own text. */
export const CLUSTER_DENIED = {
  errorCode: ErrorCode.ClusterAuthorizationFailed,
  message: 'Cluster authorization failed.',
} as const

/**
 * The operation on the cluster each API needs for the whole request, from Kafka's table
 * (API_AUTHORIZATIONS: its one CLUSTER check that applies always and fails the request).
 */
const CLUSTER_OPERATION: ReadonlyMap<number, AclOperation> = new Map(
  [...API_AUTHORIZATIONS.values()].flatMap((entry) => {
    const check = entry.checks.find(
      (c) => c.resourceType === ResourceType.Cluster && c.onDenied === 'request' && c.when === undefined,
    )
    return check === undefined || entry.checks.length !== 1 ? [] : [[entry.apiKey, check.operation] as const]
  }),
)

/**
 * CLUSTER_DENIED when the principal may not do on the cluster what the request's API needs
 * (CreateAcls: ALTER, DescribeLogDirs: DESCRIBE, Vote: CLUSTER_ACTION, ...), else null.
 */
export function clusterDenied(ctx: RequestContext): typeof CLUSTER_DENIED | null {
  const operation = CLUSTER_OPERATION.get(ctx.header.requestApiKey)
  if (operation === undefined)
    throw new Error(`api key ${ctx.header.requestApiKey} has no cluster-wide check`)
  return authorize(ctx).cluster(operation) ? null : CLUSTER_DENIED
}

/** Config resource types (DescribeConfigs, AlterConfigs): TOPIC 2, BROKER 4, BROKER_LOGGER 8, CLIENT_METRICS 16, GROUP 32. */
const CONFIG_TOPIC = 2
const CONFIG_GROUP = 32
const CONFIG_ON_CLUSTER: ReadonlySet<number> = new Set([4, 8, 16])

/**
 * Kafka's check of one config resource: `operation` (DESCRIBE_CONFIGS or ALTER_CONFIGS) on the
 * cluster for BROKER, BROKER_LOGGER and CLIENT_METRICS, on the topic or group otherwise. The
 * refusal, with the error's own text, or null.
 */
export function configResourceDenied(
  authz: RequestAuthorization,
  operation: AclOperation,
  resourceType: number,
  resourceName: string,
): { errorCode: ErrorCode; errorMessage: string } | null {
  if (authz.authorizer === null) return null
  // Other types are refused as invalid by the handler, not checked.
  if (resourceType !== CONFIG_TOPIC && resourceType !== CONFIG_GROUP && !CONFIG_ON_CLUSTER.has(resourceType))
    return null
  const type =
    resourceType === CONFIG_TOPIC
      ? ResourceType.Topic
      : resourceType === CONFIG_GROUP
        ? ResourceType.Group
        : ResourceType.Cluster
  const name = type === ResourceType.Cluster ? CLUSTER_RESOURCE_NAME : resourceName
  if (authz.allowed(operation, type, name)) return null
  const errorCode = authorizationError(type)
  return { errorCode, errorMessage: errorInfo(errorCode)?.message ?? '' }
}

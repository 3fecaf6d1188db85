/**
 * AlterConfigs v0-2 (Kafka's deprecated form): replaces the whole dynamic config set of TOPIC and
 * BROKER resources, with validateOnly; checked here as Kafka's forwarding broker does, then decided
 * by the active controller. Not implemented: CLIENT_METRICS and GROUP resources (INVALID_REQUEST);
 * BROKER_LOGGER is refused as Kafka refuses it on this API.
 */
import { alterConfigsResourceProblem, javaParseInt } from '../../controller/index.ts'
import { ConfigResourceType } from '../../metadata/index.ts'
import { type AlterConfigsResponseData, apis, ErrorCode } from '../../protocol/index.ts'
import { AclOperation, authorize, configResourceDenied } from '../authorize.ts'
import { defineHandler, type Handler, type RequestContext } from '../handler.ts'
import { alterBrokerLoggers, type BrokerLoggersView } from './broker-loggers.ts'
import type { ControllerApi, FailureOf } from './controller-api.ts'

export interface AlterConfigsView {
  /** This node's id. */
  readonly nodeId: number
  /**
   * A broker listener (Kafka's ConfigAdminManager): a BROKER resource must name this node or be ''.
   * A controller listener (ControllerApis) takes any broker id.
   */
  readonly brokerListener: boolean
  /**
   * Kafka's validateBrokerConfigChange: checks a change to this node's own BROKER resource (value
   * null: deleted) before it goes to the controller, e.g. a new key store (KIP-226). Its message
   * is answered with INVALID_REQUEST; null: valid.
   */
  readonly validateOwnChange?: (changes: ReadonlyMap<string, string | null>) => string | null
  /** This node's loggers (the BROKER_LOGGER resource); absent: it has none to change. */
  readonly loggers?: BrokerLoggersView
}

export type AlterConfigsOutcome = Omit<
  AlterConfigsResponseData.AlterConfigsResourceResponseIn,
  'resourceType' | 'resourceName'
>

export interface AlterConfigsResourceLike {
  readonly resourceType: number
  readonly resourceName: string
  readonly configs: ReadonlyArray<{
    readonly name: string
    readonly value: string | null
    readonly configOperation?: number
  }>
}

/**
 * The keys a resource sets (value) or deletes (null): IncrementalAlterConfigs' SET and DELETE
 * (APPEND and SUBTRACT, list keys only, are left to the controller), AlterConfigs' values.
 */
function ownChanges(r: AlterConfigsResourceLike, incremental: boolean): Map<string, string | null> {
  const changes = new Map<string, string | null>()
  for (const c of r.configs) {
    const op = incremental ? (c.configOperation ?? 0) : 0
    if (op === 0) changes.set(c.name, c.value)
    else if (op === 1) changes.set(c.name, null)
  }
  return changes
}

const invalid = (errorMessage: string): AlterConfigsOutcome => ({
  errorCode: ErrorCode.InvalidRequest,
  errorMessage,
})

/**
 * Kafka's broker-side preprocessing (ConfigAdminManager.preprocess): one outcome per resource that
 * is answered here, undefined for one to send to the controller. A resource named twice fails
 * (both times); so do duplicate keys, null values, unknown types, and a BROKER resource naming
 * another node on a broker listener. BROKER_LOGGER (IncrementalAlterConfigs only) is answered here,
 * after Kafka's node id checks, by the node's own loggers (broker-loggers.ts). ALTER_CONFIGS on
 * the resource (the cluster for BROKER and BROKER_LOGGER) is checked where Kafka checks it: after
 * these checks, first for BROKER_LOGGER.
 */
export function preprocessAlterConfigs(
  resources: readonly AlterConfigsResourceLike[],
  incremental: boolean,
  validateOnly: boolean,
  view: AlterConfigsView,
  ctx: RequestContext,
): Array<AlterConfigsOutcome | undefined> {
  const authz = authorize(ctx)
  const counts = new Map<string, number>()
  const id = (r: AlterConfigsResourceLike) => `${r.resourceType}:${r.resourceName}`
  for (const r of resources) counts.set(id(r), (counts.get(id(r)) ?? 0) + 1)
  return resources.map((r) => {
    if ((counts.get(id(r)) ?? 0) > 1) return invalid('Each resource must appear at most once.')
    const denied = () =>
      configResourceDenied(authz, AclOperation.AlterConfigs, r.resourceType, r.resourceName)
    if (incremental && r.resourceType === ConfigResourceType.BrokerLogger) {
      const refused = denied()
      if (refused !== null) return refused
      const node = javaParseInt(r.resourceName)
      if (node === null) return invalid(`Node id must be an integer, but it is: ${r.resourceName}`)
      if (node !== view.nodeId)
        return invalid(`Unexpected node id. Expected ${view.nodeId}, but received ${r.resourceName}`)
      if (view.loggers === undefined) return invalid('This node has no loggers to change')
      return alterBrokerLoggers(view.loggers, r, validateOnly)
    }
    const problem = alterConfigsResourceProblem(r, incremental)
    if (problem !== null) return problem
    if (r.resourceType === ConfigResourceType.Broker && r.resourceName !== '' && view.brokerListener) {
      const node = javaParseInt(r.resourceName)
      if (node === null) return invalid(`Node id must be an integer, but it is: ${r.resourceName}`)
      if (node !== view.nodeId)
        return invalid(`Unexpected broker id, expected ${view.nodeId}, but received ${r.resourceName}`)
      const problem = view.validateOwnChange?.(ownChanges(r, incremental)) ?? null
      if (problem !== null) return invalid(problem)
    }
    // What passed the broker's checks is authorized next (by Kafka's controller, once forwarded).
    return denied() ?? undefined
  })
}

/**
 * Preprocesses, sends what remains to the controller, and answers every resource in request order
 * (Kafka's reassembleResponse); a resource the controller did not answer is UNKNOWN_SERVER_ERROR.
 */
export async function alterConfigsThroughController<R extends AlterConfigsResourceLike>(
  resources: readonly R[],
  preprocessed: ReadonlyArray<AlterConfigsOutcome | undefined>,
  call: (remaining: R[]) => Promise<{
    readonly responses?: readonly AlterConfigsResponseData.AlterConfigsResourceResponseIn[] | undefined
  }>,
  failureOf: FailureOf,
): Promise<AlterConfigsResponseData.AlterConfigsResourceResponseIn[]> {
  const remaining = resources.filter((_, i) => preprocessed[i] === undefined)
  const decided = new Map<string, AlterConfigsOutcome>()
  const key = (type: number | undefined, name: string | undefined) => `${type}:${name}`
  if (remaining.length > 0) {
    try {
      const res = await call(remaining)
      for (const r of res.responses ?? [])
        decided.set(key(r.resourceType, r.resourceName), {
          errorCode: r.errorCode ?? ErrorCode.None,
          errorMessage: r.errorMessage ?? null,
        })
    } catch (e) {
      const f = failureOf(e)
      for (const r of remaining)
        decided.set(key(r.resourceType, r.resourceName), { errorCode: f.errorCode, errorMessage: f.message })
    }
  }
  return resources.map((r, i) => ({
    resourceType: r.resourceType,
    resourceName: r.resourceName,
    ...(preprocessed[i] ??
      decided.get(key(r.resourceType, r.resourceName)) ?? {
        errorCode: ErrorCode.UnknownServerError,
        errorMessage: 'The controller returned no result for this resource.',
      }),
  }))
}

export function makeAlterConfigsHandler(
  controller: ControllerApi,
  failureOf: FailureOf,
  view: AlterConfigsView,
): Handler {
  return defineHandler(apis.AlterConfigs, {}, async (req, ctx) => {
    const preprocessed = preprocessAlterConfigs(req.resources, false, req.validateOnly, view, ctx)
    const responses = await alterConfigsThroughController(
      req.resources,
      preprocessed,
      (remaining) =>
        controller.alterConfigs({ resources: remaining, validateOnly: req.validateOnly }, ctx.apiVersion),
      failureOf,
    )
    return { responses }
  })
}

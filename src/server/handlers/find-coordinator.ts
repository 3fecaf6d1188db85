/**
 * FindCoordinator v0-6: group keys (KIP-699 batches from v4) answered with the leader of the
 * group's `__consumer_offsets` partition on the client's listener. Transaction and share
 * coordinators are not implemented: COORDINATOR_NOT_AVAILABLE. Each key needs DESCRIBE on its group
 * or transactional id (a share key CLUSTER_ACTION on the cluster), else Kafka's authorization error.
 */
import { type CoordinatorLocation, coordinatorError } from '../../coordinator/index.ts'
import { apis, ErrorCode, errorInfo } from '../../protocol/index.ts'
import { AclOperation, authorize, type RequestAuthorization, ResourceType } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'

export interface FindCoordinatorView {
  /** One location per key, in order. */
  findCoordinators(
    keyType: number,
    keys: readonly string[],
    listenerName: string,
  ): Promise<CoordinatorLocation[]>
}

/** Key types a FindCoordinator version may carry: share groups (2) from v6 (KIP-932). */
function keyTypeValid(keyType: number, version: number): boolean {
  return keyType === 0 || keyType === 1 || (keyType === 2 && version >= 6)
}

export function makeFindCoordinatorHandler(view: FindCoordinatorView): Handler {
  return defineHandler(apis.FindCoordinator, {}, async (req, ctx) => {
    const v = ctx.apiVersion
    const keyType = v >= 1 ? req.keyType : 0
    const batched = v >= 4
    const keys = batched ? req.coordinatorKeys : [req.key]
    const authz = authorize(ctx)
    const refusals = keys.map((key) => keyDenied(authz, keyType, key))
    const allowed = keys.filter((_, i) => refusals[i] === null)
    const found =
      keyTypeValid(keyType, v) && allowed.length > 0
        ? await view.findCoordinators(keyType, allowed, ctx.listenerName)
        : []
    let next = 0
    const locations = keys.map((_, i) => {
      if (!keyTypeValid(keyType, v))
        return coordinatorError(ErrorCode.InvalidRequest, `Invalid coordinator type ${keyType}`)
      const refusal = refusals[i] ?? null
      return refusal === null ? found[next++]! : coordinatorError(refusal, null)
    })
    if (batched) {
      return {
        throttleTimeMs: 0,
        coordinators: keys.map((key, i) => {
          const l = locations[i]!
          return {
            key,
            nodeId: l.nodeId,
            host: l.host,
            port: l.port,
            errorCode: l.errorCode,
            errorMessage: l.errorMessage,
          }
        }),
      }
    }
    const l = locations[0]!
    return {
      throttleTimeMs: 0,
      errorCode: l.errorCode,
      // Kafka's v1-3 answer (FindCoordinatorResponse.prepareOldResponse) carries the error's own
      // text, "NONE" on success, never a custom message.
      ...(v >= 1 ? { errorMessage: oldErrorMessage(l.errorCode) } : {}),
      nodeId: l.nodeId,
      host: l.host,
      port: l.port,
    }
  })
}

/** The authorization error of one key, or null when the principal may look it up. */
function keyDenied(authz: RequestAuthorization, keyType: number, key: string): ErrorCode | null {
  if (authz.authorizer === null) return null
  if (keyType === 0)
    return authz.allowed(AclOperation.Describe, ResourceType.Group, key)
      ? null
      : ErrorCode.GroupAuthorizationFailed
  if (keyType === 1) {
    const ok = authz.allowed(AclOperation.Describe, ResourceType.TransactionalId, key)
    return ok ? null : ErrorCode.TransactionalIdAuthorizationFailed
  }
  if (keyType === 2)
    return authz.cluster(AclOperation.ClusterAction) ? null : ErrorCode.ClusterAuthorizationFailed
  return null
}

/** Kafka's `Errors.message()`: the error's default text, or its name when it has none ("NONE"). */
function oldErrorMessage(errorCode: ErrorCode): string {
  const info = errorInfo(errorCode) ?? errorInfo(ErrorCode.UnknownServerError)!
  return info.message === '' ? info.name : info.message
}

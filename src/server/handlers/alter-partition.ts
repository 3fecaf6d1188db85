/**
 * AlterPartition v2-3 (KIP-497, KIP-841), controller listener only: a partition leader's ISR
 * change, decided by the active controller and answered once its records commit. A node that is
 * not the active controller answers NOT_CONTROLLER so the leader looks for the active one.
 */
import type { AlterPartitionRequestData, AlterPartitionResponseData } from '../../protocol/index.ts'
import { apis, ErrorCode } from '../../protocol/index.ts'
import { clusterDenied } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'
import type { FailureOf } from './controller-api.ts'

export interface AlterPartitionController {
  alterPartition(
    req: AlterPartitionRequestData.AlterPartitionRequest,
    version?: number,
  ): Promise<AlterPartitionResponseData.AlterPartitionResponseIn>
}

export function makeAlterPartitionHandler(
  controller: AlterPartitionController,
  failureOf: FailureOf,
): Handler {
  return defineHandler(apis.AlterPartition, {}, async (req, ctx) => {
    if (clusterDenied(ctx) !== null)
      return { throttleTimeMs: 0, errorCode: ErrorCode.ClusterAuthorizationFailed, topics: [] }
    try {
      return await controller.alterPartition(req, ctx.apiVersion)
    } catch (e) {
      return { throttleTimeMs: 0, errorCode: failureOf(e).errorCode, topics: [] }
    }
  })
}

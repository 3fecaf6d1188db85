/**
 * ElectLeaders v0-2 (KIP-183, KIP-460): preferred and unclean leader elections, decided by the
 * active controller (forwarded by brokers) and answered once the records commit.
 */
import { apis, type ErrorCode } from '../../protocol/index.ts'
import { clusterDenied } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'
import type { ControllerApi, FailureOf } from './controller-api.ts'

export function makeElectLeadersHandler(controller: ControllerApi, failureOf: FailureOf): Handler {
  return defineHandler(apis.ElectLeaders, {}, async (req, ctx) => {
    const failed = (f: { errorCode: ErrorCode; message: string }) => ({
      errorCode: ctx.apiVersion >= 1 ? f.errorCode : 0,
      replicaElectionResults: (req.topicPartitions ?? []).map((t) => ({
        topic: t.topic,
        partitionResult: t.partitions.map((partitionId) => ({
          partitionId,
          errorCode: f.errorCode,
          errorMessage: f.message,
        })),
      })),
    })
    const denied = clusterDenied(ctx)
    if (denied !== null) return failed(denied)
    try {
      return await controller.electLeaders(req, ctx.apiVersion)
    } catch (e) {
      return failed(failureOf(e))
    }
  })
}

/**
 * UpdateFeatures v0-2 (KIP-584; `kafka-features upgrade|downgrade`): decided by the active
 * controller (forwarded by brokers) and answered once the records commit. ALTER on the cluster:
 * denied, CLUSTER_AUTHORIZATION_FAILED for the request (no per-feature results).
 */
import {
  apis,
  type UpdateFeaturesRequestData,
  type UpdateFeaturesResponseData,
} from '../../protocol/index.ts'
import { clusterDenied } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'
import type { FailureOf } from './controller-api.ts'

/** The active controller's UpdateFeatures, here or forwarded at the client's version. */
export interface FeatureController {
  updateFeatures(
    req: UpdateFeaturesRequestData.UpdateFeaturesRequest,
    version?: number,
  ): Promise<UpdateFeaturesResponseData.UpdateFeaturesResponseIn>
}

export function makeUpdateFeaturesHandler(controller: FeatureController, failureOf: FailureOf): Handler {
  return defineHandler(apis.UpdateFeatures, {}, async (req, ctx) => {
    const failed = (f: { errorCode: number; message: string }) => ({
      throttleTimeMs: 0,
      errorCode: f.errorCode,
      errorMessage: f.message,
      // As Kafka: a request refused as a whole lists no feature.
      results: [],
    })
    const denied = clusterDenied(ctx)
    if (denied !== null) return failed(denied)
    try {
      return await controller.updateFeatures(req, ctx.apiVersion)
    } catch (e) {
      return failed(failureOf(e))
    }
  })
}

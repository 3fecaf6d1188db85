/**
 * AllocateProducerIds v0 (controller listener): a broker's request for its next block of producer
 * ids, decided by the active controller (ProducerIdsRecord) and answered once committed.
 */

import { NO_PRODUCER_ID } from '../../model/index.ts'
import type { AllocateProducerIdsRequestData, AllocateProducerIdsResponseData } from '../../protocol/index.ts'
import { apis, ErrorCode } from '../../protocol/index.ts'
import { clusterDenied } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'
import type { FailureOf } from './controller-api.ts'

export interface ProducerIdsController {
  allocateProducerIds(
    req: AllocateProducerIdsRequestData.AllocateProducerIdsRequest,
  ): Promise<AllocateProducerIdsResponseData.AllocateProducerIdsResponseIn>
}

export function makeAllocateProducerIdsHandler(
  controller: ProducerIdsController,
  failureOf: FailureOf,
): Handler {
  return defineHandler(apis.AllocateProducerIds, {}, async (req, ctx) => {
    if (clusterDenied(ctx) !== null) {
      const errorCode = ErrorCode.ClusterAuthorizationFailed
      return { throttleTimeMs: 0, errorCode, producerIdStart: NO_PRODUCER_ID, producerIdLen: 0 }
    }
    try {
      return await controller.allocateProducerIds(req)
    } catch (e) {
      return {
        throttleTimeMs: 0,
        errorCode: failureOf(e).errorCode,
        producerIdStart: NO_PRODUCER_ID,
        producerIdLen: 0,
      }
    }
  })
}

/**
 * BrokerRegistration v0-4 and BrokerHeartbeat v0-1, on the controller listener only: brokers join
 * the cluster and keep their session. A node that is not the active controller answers
 * NOT_CONTROLLER so the broker looks for the leader.
 */
import { apis, ErrorCode } from '../../protocol/index.ts'
import { clusterDenied } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'
import type { ControllerRegistrationApi, FailureOf } from './controller-api.ts'

export function makeBrokerRegistrationHandlers(
  controller: ControllerRegistrationApi,
  failureOf: FailureOf,
): Handler[] {
  return [
    defineHandler(apis.BrokerRegistration, {}, async (req, ctx) => {
      if (clusterDenied(ctx) !== null)
        return { errorCode: ErrorCode.ClusterAuthorizationFailed, brokerEpoch: -1n }
      try {
        return await controller.registerBroker(req)
      } catch (e) {
        return { errorCode: failureOf(e).errorCode, brokerEpoch: -1n }
      }
    }),
    defineHandler(apis.BrokerHeartbeat, {}, async (req, ctx) => {
      if (clusterDenied(ctx) !== null) {
        const errorCode = ErrorCode.ClusterAuthorizationFailed
        return { errorCode, isCaughtUp: false, isFenced: true, shouldShutDown: false }
      }
      try {
        return await controller.brokerHeartbeat(req)
      } catch (e) {
        return { errorCode: failureOf(e).errorCode, isCaughtUp: false, isFenced: true, shouldShutDown: false }
      }
    }),
  ]
}

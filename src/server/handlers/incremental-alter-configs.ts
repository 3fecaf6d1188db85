/**
 * IncrementalAlterConfigs v0-1: SET, DELETE, APPEND and SUBTRACT (list keys) on TOPIC and BROKER
 * resources, with validateOnly; checked here as Kafka's forwarding broker does, then decided by the
 * active controller; BROKER_LOGGER (log levels) by this node itself (broker-loggers.ts). Not
 * implemented: CLIENT_METRICS and GROUP resources (INVALID_REQUEST).
 */
import { apis } from '../../protocol/index.ts'
import { defineHandler, type Handler } from '../handler.ts'
import {
  type AlterConfigsView,
  alterConfigsThroughController,
  preprocessAlterConfigs,
} from './alter-configs.ts'
import type { ControllerApi, FailureOf } from './controller-api.ts'

export function makeIncrementalAlterConfigsHandler(
  controller: ControllerApi,
  failureOf: FailureOf,
  view: AlterConfigsView,
): Handler {
  return defineHandler(apis.IncrementalAlterConfigs, {}, async (req, ctx) => {
    const preprocessed = preprocessAlterConfigs(req.resources, true, req.validateOnly, view, ctx)
    const responses = await alterConfigsThroughController(
      req.resources,
      preprocessed,
      (remaining) =>
        controller.incrementalAlterConfigs(
          { resources: remaining, validateOnly: req.validateOnly },
          ctx.apiVersion,
        ),
      failureOf,
    )
    return { responses }
  })
}

/** CreatePartitions v0-3: grows topics, decided by the active controller. */
import { apis } from '../../protocol/index.ts'
import { defineHandler, type Handler } from '../handler.ts'
import type { ControllerApi, FailureOf } from './controller-api.ts'

export function makeCreatePartitionsHandler(controller: ControllerApi, failureOf: FailureOf): Handler {
  return defineHandler(apis.CreatePartitions, {}, async (req, ctx) => {
    try {
      return await controller.createPartitions(req, ctx.apiVersion)
    } catch (e) {
      const f = failureOf(e)
      return {
        results: req.topics.map((t) => ({ name: t.name, errorCode: f.errorCode, errorMessage: f.message })),
      }
    }
  })
}

/** DeleteTopics v1-6: by name or (v6) by topic id, decided by the active controller. */
import { apis } from '../../protocol/index.ts'
import { defineHandler, type Handler } from '../handler.ts'
import type { ControllerApi, FailureOf } from './controller-api.ts'

export function makeDeleteTopicsHandler(controller: ControllerApi, failureOf: FailureOf): Handler {
  return defineHandler(apis.DeleteTopics, {}, async (req, ctx) => {
    try {
      return await controller.deleteTopics(req, ctx.apiVersion)
    } catch (e) {
      const f = failureOf(e)
      return {
        responses: [
          ...req.topicNames.map((name) => ({ name, errorCode: f.errorCode, errorMessage: f.message })),
          ...req.topics.map((t) => ({
            name: t.name,
            topicId: t.topicId,
            errorCode: f.errorCode,
            errorMessage: f.message,
          })),
        ],
      }
    }
  })
}

/**
 * CreateTopics v2-7: validated and decided by the active controller (forwarded from a broker), with
 * explicit assignments, configs and validate-only mode; answered once the records commit.
 */
import { apis } from '../../protocol/index.ts'
import { defineHandler, type Handler } from '../handler.ts'
import type { ControllerApi, FailureOf } from './controller-api.ts'

export function makeCreateTopicsHandler(
  controller: Pick<ControllerApi, 'createTopics'>,
  failureOf: FailureOf,
): Handler {
  return defineHandler(apis.CreateTopics, {}, async (req, ctx) => {
    try {
      return await controller.createTopics(req, ctx.apiVersion)
    } catch (e) {
      const f = failureOf(e)
      return {
        topics: req.topics.map((t) => ({ name: t.name, errorCode: f.errorCode, errorMessage: f.message })),
      }
    }
  })
}

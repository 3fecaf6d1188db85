/**
 * CreatePartitions v0-3: grows topics, decided by the active controller. ACLs as Kafka's
 * controller: ALTER on each topic, denied TOPIC_AUTHORIZATION_FAILED.
 */
import { apis, ErrorCode } from '../../protocol/index.ts'
import { AclOperation, authorize, decideAllowed, ResourceType } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'
import type { ControllerApi, FailureOf } from './controller-api.ts'

export function makeCreatePartitionsHandler(controller: ControllerApi, failureOf: FailureOf): Handler {
  return defineHandler(apis.CreatePartitions, {}, async (req, ctx) => {
    const authz = authorize(ctx)
    let throttleTimeMs = 0
    try {
      const results = await decideAllowed(
        req.topics,
        (t) => authz.allowed(AclOperation.Alter, ResourceType.Topic, t.name),
        async (allowed) => {
          const r = await controller.createPartitions(
            allowed.length === req.topics.length ? req : { ...req, topics: [...allowed] },
            ctx.apiVersion,
          )
          throttleTimeMs = r.throttleTimeMs ?? 0
          return r.results ?? []
        },
        (t) => ({
          name: t.name,
          errorCode: ErrorCode.TopicAuthorizationFailed,
          errorMessage: null,
        }),
      )
      return { throttleTimeMs, results }
    } catch (e) {
      const f = failureOf(e)
      return {
        results: req.topics.map((t) => ({ name: t.name, errorCode: f.errorCode, errorMessage: f.message })),
      }
    }
  })
}

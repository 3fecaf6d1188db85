/**
 * CreateTopics v2-7: validated and decided by the active controller (forwarded from a broker), with
 * explicit assignments, configs and validate-only mode; answered once the records commit. ACLs as
 * Kafka's controller: CREATE on the cluster or on each topic (denied: TOPIC_AUTHORIZATION_FAILED),
 * and the configs of the answer only with DESCRIBE_CONFIGS on the topic.
 */
import { apis, type CreateTopicsResponseData, ErrorCode } from '../../protocol/index.ts'
import { AclOperation, authorize, decideAllowed, ResourceType } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'
import type { ControllerApi, FailureOf } from './controller-api.ts'

type TopicResult = CreateTopicsResponseData.CreatableTopicResultIn

export function makeCreateTopicsHandler(
  controller: Pick<ControllerApi, 'createTopics'>,
  failureOf: FailureOf,
): Handler {
  return defineHandler(apis.CreateTopics, {}, async (req, ctx) => {
    const authz = authorize(ctx)
    const clusterCreate = authz.cluster(AclOperation.Create)
    const creatable = (name: string) =>
      clusterCreate || authz.allowed(AclOperation.Create, ResourceType.Topic, name)
    let throttleTimeMs = 0
    try {
      const topics = await decideAllowed<(typeof req.topics)[number], TopicResult>(
        req.topics,
        (t) => creatable(t.name),
        async (allowed) => {
          const r = await controller.createTopics(
            allowed.length === req.topics.length ? req : { ...req, topics: [...allowed] },
            ctx.apiVersion,
          )
          throttleTimeMs = r.throttleTimeMs ?? 0
          return r.topics ?? []
        },
        (t): TopicResult => ({
          name: t.name,
          errorCode: ErrorCode.TopicAuthorizationFailed,
          errorMessage: 'Authorization failed.',
        }),
      )
      if (authz.authorizer === null) return { throttleTimeMs, topics }
      return { throttleTimeMs, topics: topics.map((t) => hideConfigs(t, authz)) }
    } catch (e) {
      const f = failureOf(e)
      return {
        topics: req.topics.map((t) => ({ name: t.name, errorCode: f.errorCode, errorMessage: f.message })),
      }
    }
  })
}

/** A created topic's configs need DESCRIBE_CONFIGS on it: else topicConfigErrorCode says why they are absent. */
function hideConfigs(t: TopicResult, authz: ReturnType<typeof authorize>): TopicResult {
  if (t.errorCode !== ErrorCode.None && t.errorCode !== undefined) return t
  if (authz.allowed(AclOperation.DescribeConfigs, ResourceType.Topic, t.name ?? '')) return t
  return { ...t, configs: [], topicConfigErrorCode: ErrorCode.TopicAuthorizationFailed }
}

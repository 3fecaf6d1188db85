/**
 * DeleteTopics v1-6: by name or (v6) by topic id, decided by the active controller. ACLs as Kafka's
 * controller: DELETE on the cluster covers every topic; else a topic needs DESCRIBE (denied: a
 * topic named by id answers without its name) and DELETE, each denial TOPIC_AUTHORIZATION_FAILED.
 */
import type { MetadataImage } from '../../metadata/index.ts'
import { type TopicName, ZERO_UUID } from '../../model/index.ts'
import { apis, type DeleteTopicsResponseData, ErrorCode, errorInfo } from '../../protocol/index.ts'
import { AclOperation, authorize, ResourceType } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'
import type { ControllerApi, FailureOf } from './controller-api.ts'

type Result = DeleteTopicsResponseData.DeletableTopicResultIn

export function makeDeleteTopicsHandler(
  controller: Pick<ControllerApi, 'deleteTopics'>,
  failureOf: FailureOf,
  image: () => MetadataImage,
): Handler {
  return defineHandler(apis.DeleteTopics, {}, async (req, ctx) => {
    const authz = authorize(ctx)
    const all = authz.cluster(AclOperation.Delete)
    const may = (operation: AclOperation, name: string) =>
      all || authz.allowed(operation, ResourceType.Topic, name)
    const denied: Result[] = []
    /** Answers the topic denied; false, to leave it out of what the controller decides. */
    const deny = (name: TopicName | null, topicId = ZERO_UUID): false => {
      // Kafka's ApiError of the code alone: the error's own text.
      const errorCode = ErrorCode.TopicAuthorizationFailed
      denied.push({ name, topicId, errorCode, errorMessage: errorInfo(errorCode)?.message ?? null })
      return false
    }
    let effective = req
    if (authz.authorizer !== null) {
      const known = image()
      // By name (in topicNames, or in topics with no id): DESCRIBE, then an unknown name is the
      // controller's to answer, then DELETE; every denial names the topic, never its id.
      const byName = (name: TopicName): boolean => {
        if (!may(AclOperation.Describe, name)) return deny(name)
        if (known.topicsByName.has(name) && !may(AclOperation.Delete, name)) return deny(name)
        return true
      }
      const topicNames = req.topicNames.filter(byName)
      const topics = req.topics.filter((t) => {
        if (t.name !== null && t.topicId === ZERO_UUID) return byName(t.name)
        // By id alone: a topic the principal may not describe answers without its name.
        const name = t.name === null ? (known.topicsById.get(t.topicId)?.name ?? null) : null
        if (name === null) return true
        if (!may(AclOperation.Describe, name)) return deny(null, t.topicId)
        if (!may(AclOperation.Delete, name)) return deny(name, t.topicId)
        return true
      })
      effective = { ...req, topicNames, topics }
    }
    if (denied.length > 0 && effective.topicNames.length + effective.topics.length === 0) {
      return { responses: denied }
    }
    try {
      const r = await controller.deleteTopics(effective, ctx.apiVersion)
      return denied.length === 0 ? r : { ...r, responses: [...(r.responses ?? []), ...denied] }
    } catch (e) {
      const f = failureOf(e)
      return {
        responses: [
          ...effective.topicNames.map((name) => ({ name, errorCode: f.errorCode, errorMessage: f.message })),
          ...effective.topics.map((t) => ({
            name: t.name,
            topicId: t.topicId,
            errorCode: f.errorCode,
            errorMessage: f.message,
          })),
          ...denied,
        ],
      }
    }
  })
}

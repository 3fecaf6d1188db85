/**
 * Metadata v0-13: brokers reachable on the request's listener, topics with partitions, leaders,
 * leader epochs, replicas, ISR and offline replicas, from the metadata image. Unknown topics are
 * created when `auto.create.topics.enable` and the client allow it (answered UNKNOWN_TOPIC_OR_PARTITION
 * until they exist, as a KRaft Kafka broker does). v13's top-level error code is always NONE: it
 * exists for REBOOTSTRAP_REQUIRED (KIP-1102), which Weir never asks of clients. ACLs as Kafka's:
 * DESCRIBE on each topic (named ones denied answer TOPIC_AUTHORIZATION_FAILED, a listing leaves
 * them out), CREATE on the cluster or topic to auto-create, authorized operations on request.
 */
import type { MetadataImage } from '../../metadata/index.ts'
import { type BrokerId, type TopicName, type Uuid, ZERO_UUID } from '../../model/index.ts'
import {
  apis,
  type CreateTopicsResponseData,
  ErrorCode,
  type MetadataResponseData,
} from '../../protocol/index.ts'
import { AUTHORIZED_OPERATIONS_OMITTED } from '../../security/index.ts'
import { AclOperation, authorize, type RequestAuthorization, ResourceType } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'

/** Topics clients see as internal. */
export const INTERNAL_TOPIC_NAMES: ReadonlySet<string> = new Set([
  '__consumer_offsets',
  '__transaction_state',
])

export interface MetadataView {
  readonly clusterId: string
  readonly nodeId: BrokerId
  image(): MetadataImage
  /** `auto.create.topics.enable` */
  readonly autoCreateTopics: boolean
  /** Creates topics with the broker defaults (through the controller); fire and forget. */
  createTopics(names: readonly TopicName[]): Promise<CreateTopicsResponseData.CreateTopicsResponseIn>
  readonly topicNameProblem: (name: string) => string | null
}

type TopicOut = MetadataResponseData.MetadataResponseTopicIn

export function brokersOn(
  image: MetadataImage,
  listenerName: string,
): MetadataResponseData.MetadataResponseBrokerIn[] {
  const out: MetadataResponseData.MetadataResponseBrokerIn[] = []
  for (const b of image.brokers.values()) {
    if (b.fenced) continue
    const e = b.endpoints.find((x) => x.name === listenerName)
    if (e !== undefined) out.push({ nodeId: b.id, host: e.host, port: e.port, rack: b.rack })
  }
  return out.sort((a, b) => (a.nodeId ?? 0) - (b.nodeId ?? 0))
}

function describeTopic(
  image: MetadataImage,
  name: TopicName,
  listenerName: string,
  authorizedOps: number,
): TopicOut | null {
  const topic = image.topicsByName.get(name)
  if (topic === undefined) return null
  const partitions: MetadataResponseData.MetadataResponsePartitionIn[] = []
  for (const [partitionIndex, p] of [...topic.partitions].sort((a, b) => a[0] - b[0])) {
    const offline = p.replicas.filter((r) => {
      const b = image.brokers.get(r)
      return b === undefined || b.fenced
    })
    let errorCode: ErrorCode = ErrorCode.None
    if (p.leader < 0) errorCode = ErrorCode.LeaderNotAvailable
    else if (image.brokers.get(p.leader)?.endpoints.find((e) => e.name === listenerName) === undefined) {
      errorCode = ErrorCode.ListenerNotFound
    }
    partitions.push({
      errorCode,
      partitionIndex,
      leaderId: p.leader,
      leaderEpoch: p.leaderEpoch,
      replicaNodes: [...p.replicas],
      isrNodes: [...p.isr],
      offlineReplicas: offline,
    })
  }
  return {
    errorCode: ErrorCode.None,
    name,
    topicId: topic.id,
    isInternal: INTERNAL_TOPIC_NAMES.has(name),
    partitions,
    topicAuthorizedOperations: authorizedOps,
  }
}

export function makeMetadataHandler(view: MetadataView): Handler {
  return defineHandler(apis.Metadata, {}, async (req, ctx) => {
    const v = ctx.apiVersion
    const image = view.image()
    const authz = authorize(ctx)
    const includeOps = v >= 8 && req.includeTopicAuthorizedOperations
    const opsOf = (name: TopicName): number =>
      includeOps ? authz.operations(ResourceType.Topic, name) : AUTHORIZED_OPERATIONS_OMITTED
    const describable = (name: string) => authz.allowed(AclOperation.Describe, ResourceType.Topic, name)
    // Kafka's order: unknown topic ids, the topics described, those denied CREATE, those denied
    // DESCRIBE (named ones only: a listing of every topic leaves them out, disclosing nothing).
    const topics: TopicOut[] = []
    const deniedCreate: TopicOut[] = []
    const deniedDescribe: TopicOut[] = []
    // v0: an empty list means every topic; v1+: null means every topic, empty means none.
    const all = req.topics === null || (v === 0 && req.topics.length === 0)
    if (all) {
      for (const name of [...image.topicsByName.keys()].sort()) {
        if (!describable(name)) continue
        const t = describeTopic(image, name, ctx.listenerName, opsOf(name))
        if (t !== null) topics.push(t)
      }
    } else {
      const allowAutoCreate = view.autoCreateTopics && (v < 4 || req.allowAutoTopicCreation)
      const toCreate: TopicName[] = []
      const unknownIds: TopicOut[] = []
      for (const wanted of req.topics ?? []) {
        if (wanted.name === null) {
          const byId = image.topicsById.get(wanted.topicId)
          if (byId === undefined) {
            unknownIds.push(emptyTopic(ErrorCode.UnknownTopicId, null, wanted.topicId))
          } else if (!describable(byId.name)) {
            // Topic ids are not secret: the denial names the id, never the name.
            deniedDescribe.push(emptyTopic(ErrorCode.TopicAuthorizationFailed, null, wanted.topicId))
          } else {
            topics.push(describeTopic(image, byId.name, ctx.listenerName, opsOf(byId.name))!)
          }
          continue
        }
        if (!describable(wanted.name)) {
          deniedDescribe.push(emptyTopic(ErrorCode.TopicAuthorizationFailed, wanted.name, ZERO_UUID))
          continue
        }
        const t = describeTopic(image, wanted.name, ctx.listenerName, opsOf(wanted.name))
        if (t !== null) {
          topics.push(t)
          continue
        }
        // Auto-creation needs CREATE on the cluster or on the topic, asked of every missing topic
        // before its name is validated (Kafka's KafkaApis).
        if (allowAutoCreate && !mayCreate(authz, wanted.name)) {
          deniedCreate.push({
            ...emptyTopic(ErrorCode.TopicAuthorizationFailed, wanted.name, ZERO_UUID),
            isInternal: INTERNAL_TOPIC_NAMES.has(wanted.name),
          })
          continue
        }
        const problem = view.topicNameProblem(wanted.name)
        let errorCode: ErrorCode = ErrorCode.UnknownTopicOrPartition
        if (problem !== null) errorCode = ErrorCode.InvalidTopicException
        else if (allowAutoCreate && !INTERNAL_TOPIC_NAMES.has(wanted.name)) {
          // Kafka 4.0 (AutoTopicCreationManager.sendCreateTopicRequest) answers UNKNOWN_TOPIC_OR_PARTITION
          // while the controller creates the topic; LEADER_NOT_AVAILABLE was ZooKeeper mode's answer.
          toCreate.push(wanted.name)
        }
        topics.push({
          ...emptyTopic(errorCode, wanted.name, ZERO_UUID),
          topicAuthorizedOperations: opsOf(wanted.name),
        })
      }
      topics.unshift(...unknownIds)
      if (toCreate.length > 0) void view.createTopics(toCreate).catch(() => {})
    }
    return {
      brokers: brokersOn(image, ctx.listenerName),
      clusterId: view.clusterId,
      // Clients cannot reach KRaft controllers; like Kafka, name a live broker (this one).
      controllerId: view.nodeId,
      topics: [...topics, ...deniedCreate, ...deniedDescribe],
      clusterAuthorizedOperations:
        v >= 8 && v <= 10 && req.includeClusterAuthorizedOperations
          ? authz.clusterOperations()
          : AUTHORIZED_OPERATIONS_OMITTED,
    }
  })
}

/** CREATE on the cluster covers every topic; else CREATE on the topic itself. */
function mayCreate(authz: RequestAuthorization, name: string): boolean {
  return authz.cluster(AclOperation.Create) || authz.allowed(AclOperation.Create, ResourceType.Topic, name)
}

function emptyTopic(errorCode: ErrorCode, name: TopicName | null, topicId: Uuid): TopicOut {
  return {
    errorCode,
    name,
    topicId,
    isInternal: false,
    partitions: [],
    topicAuthorizedOperations: AUTHORIZED_OPERATIONS_OMITTED,
  }
}

/**
 * Metadata v0-13: brokers reachable on the request's listener, topics with partitions, leaders,
 * leader epochs, replicas, ISR and offline replicas, from the metadata image. Unknown topics are
 * created when `auto.create.topics.enable` and the client allow it (answered UNKNOWN_TOPIC_OR_PARTITION
 * until they exist, as a KRaft Kafka broker does). v13's top-level error code is always NONE: it
 * exists for REBOOTSTRAP_REQUIRED (KIP-1102), which Weir never asks of clients. Not implemented:
 * ACLs (every operation is authorized).
 */
import type { MetadataImage } from '../../metadata/index.ts'
import { type BrokerId, type TopicName, ZERO_UUID } from '../../model/index.ts'
import {
  apis,
  type CreateTopicsResponseData,
  ErrorCode,
  type MetadataResponseData,
} from '../../protocol/index.ts'
import { defineHandler, type Handler } from '../handler.ts'

/** Topics clients see as internal. */
export const INTERNAL_TOPIC_NAMES: ReadonlySet<string> = new Set([
  '__consumer_offsets',
  '__transaction_state',
])
/** Kafka's "not requested" value for authorized operations. */
export const AUTHORIZED_OPERATIONS_OMITTED = -2147483648
/** Kafka's AclOperation codes a topic supports: READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11. */
export const TOPIC_OPERATIONS = [3, 4, 5, 6, 7, 8, 10, 11].reduce((bits, op) => bits | (1 << op), 0)
/** And the cluster: CREATE 5, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12, ALTER 7. */
export const CLUSTER_OPERATIONS = [5, 7, 8, 9, 10, 11, 12].reduce((bits, op) => bits | (1 << op), 0)

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
  includeOps: boolean,
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
    topicAuthorizedOperations: includeOps ? TOPIC_OPERATIONS : AUTHORIZED_OPERATIONS_OMITTED,
  }
}

export function makeMetadataHandler(view: MetadataView): Handler {
  return defineHandler(apis.Metadata, {}, async (req, ctx) => {
    const v = ctx.apiVersion
    const image = view.image()
    const includeOps = v >= 8 && req.includeTopicAuthorizedOperations
    const topics: TopicOut[] = []
    // v0: an empty list means every topic; v1+: null means every topic, empty means none.
    const all = req.topics === null || (v === 0 && req.topics.length === 0)
    if (all) {
      for (const name of [...image.topicsByName.keys()].sort()) {
        const t = describeTopic(image, name, ctx.listenerName, includeOps)
        if (t !== null) topics.push(t)
      }
    } else {
      const allowAutoCreate = view.autoCreateTopics && (v < 4 || req.allowAutoTopicCreation)
      const toCreate: TopicName[] = []
      for (const wanted of req.topics ?? []) {
        if (wanted.name === null) {
          const byId = image.topicsById.get(wanted.topicId)
          const t = byId === undefined ? null : describeTopic(image, byId.name, ctx.listenerName, includeOps)
          topics.push(
            t ?? {
              errorCode: ErrorCode.UnknownTopicId,
              name: null,
              topicId: wanted.topicId,
              isInternal: false,
              partitions: [],
              topicAuthorizedOperations: AUTHORIZED_OPERATIONS_OMITTED,
            },
          )
          continue
        }
        const t = describeTopic(image, wanted.name, ctx.listenerName, includeOps)
        if (t !== null) {
          topics.push(t)
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
          errorCode,
          name: wanted.name,
          topicId: ZERO_UUID,
          isInternal: false,
          partitions: [],
          topicAuthorizedOperations: AUTHORIZED_OPERATIONS_OMITTED,
        })
      }
      if (toCreate.length > 0) void view.createTopics(toCreate).catch(() => {})
    }
    return {
      brokers: brokersOn(image, ctx.listenerName),
      clusterId: view.clusterId,
      // Clients cannot reach KRaft controllers; like Kafka, name a live broker (this one).
      controllerId: view.nodeId,
      topics,
      clusterAuthorizedOperations:
        v >= 8 && v <= 10 && req.includeClusterAuthorizedOperations
          ? CLUSTER_OPERATIONS
          : AUTHORIZED_OPERATIONS_OMITTED,
    }
  })
}

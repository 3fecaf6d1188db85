/**
 * FindCoordinator's answer for a group or a transactional id, from the metadata image: the leader
 * of its `__consumer_offsets` (or `__transaction_state`) partition and its endpoint on the client's
 * listener. Pure.
 */
import { type MetadataImage, NO_LEADER } from '../metadata/index.ts'
import { type BrokerId, NO_NODE, TopicName } from '../model/index.ts'
import { ErrorCode } from '../protocol/index.ts'
import { partitionForGroup } from './java-hash.ts'

export const GROUP_METADATA_TOPIC_NAME = TopicName('__consumer_offsets')
export const TRANSACTION_STATE_TOPIC_NAME = TopicName('__transaction_state')

/** FindCoordinator's key types. */
export const CoordinatorType = { Group: 0, Transaction: 1, Share: 2 } as const

export interface CoordinatorLocation {
  readonly errorCode: ErrorCode
  readonly errorMessage: string | null
  /** -1 with an error. */
  readonly nodeId: BrokerId
  readonly host: string
  readonly port: number
}

export function coordinatorError(errorCode: ErrorCode, errorMessage: string | null): CoordinatorLocation {
  return { errorCode, errorMessage, nodeId: NO_NODE, host: '', port: -1 }
}

/**
 * Where the coordinator of `groupId` is, or `'no-topic'` when `__consumer_offsets` does not exist
 * yet (the caller creates it and answers COORDINATOR_NOT_AVAILABLE meanwhile). The partition count
 * is the topic's, as Kafka's coordinator takes it from metadata once the topic exists.
 */
export function locateGroupCoordinator(
  image: MetadataImage,
  groupId: string,
  listenerName: string,
): CoordinatorLocation | 'no-topic' {
  return locateCoordinator(image, GROUP_METADATA_TOPIC_NAME, groupId, listenerName)
}

/** `locateGroupCoordinator` for any key hashed onto `topic` (a transactional id on `__transaction_state`). */
export function locateCoordinator(
  image: MetadataImage,
  topicName: TopicName,
  key: string,
  listenerName: string,
): CoordinatorLocation | 'no-topic' {
  const topic = image.topicsByName.get(topicName)
  if (topic === undefined || topic.partitions.size === 0) return 'no-topic'
  const partition = partitionForGroup(key, topic.partitions.size)
  const leader = topic.partitions.get(partition)?.leader ?? NO_LEADER
  if (leader === NO_LEADER) {
    return coordinatorError(ErrorCode.CoordinatorNotAvailable, 'The coordinator is not available.')
  }
  const broker = image.brokers.get(leader)
  const endpoint = broker?.endpoints.find((e) => e.name === listenerName)
  if (broker === undefined || broker.fenced || endpoint === undefined) {
    return coordinatorError(ErrorCode.CoordinatorNotAvailable, 'The coordinator is not available.')
  }
  return {
    errorCode: ErrorCode.None,
    errorMessage: null,
    nodeId: leader,
    host: endpoint.host,
    port: endpoint.port,
  }
}

/**
 * Which partitions of a coordinator's internal topic (`__consumer_offsets`, `__transaction_state`)
 * this broker coordinates, from the metadata image and the replica manager: the step both
 * coordinations run after each publication; and the creation of the topic on first use.
 */
import type { MetadataImage } from '../metadata/index.ts'
import type { BrokerId, TopicName } from '../model/index.ts'
import { type CreateTopicsResponseData, ErrorCode } from '../protocol/index.ts'
import type { ReplicaManager } from '../replication/index.ts'

/** What a coordinator shell is told (GroupCoordinator, TransactionCoordinator). */
export interface LedPartitions {
  partitions(): readonly { readonly partition: number }[]
  onElection(partition: number, epoch: number): Promise<void>
  onResignation(partition: number): void
}

/**
 * Resigns a partition as soon as the metadata names another leader (as Kafka's metadata publisher
 * does), elects one once the replica manager leads it, at the epoch it leads in. A partition being
 * made leader again in a new epoch stays loaded meanwhile (its writes wait for the new epoch in
 * the replica manager).
 */
export function syncCoordinatorLeadership(
  c: LedPartitions,
  topicName: TopicName,
  image: MetadataImage,
  replicas: ReplicaManager,
  myId: BrokerId | number,
): void {
  const topic = image.topicsByName.get(topicName)
  for (const { partition } of c.partitions()) {
    if (
      topic?.partitions.get(partition)?.leader !== myId ||
      replicas.getPartition(topicName, partition) === undefined
    ) {
      c.onResignation(partition)
    }
  }
  if (topic === undefined) return
  for (const [index, reg] of topic.partitions) {
    const p = replicas.getPartition(topicName, index)
    if (reg.leader === myId && p?.isLeader === true) void c.onElection(index, p.leaderEpoch)
  }
}

/**
 * Creates a coordinator's internal topic through the controller; true when it exists now
 * (created, or TOPIC_ALREADY_EXISTS), false when the creation failed (logged). As Kafka: with fewer
 * brokers than its replication factor it fails (INVALID_REPLICATION_FACTOR) and FindCoordinator
 * answers COORDINATOR_NOT_AVAILABLE until enough brokers register.
 */
export async function createCoordinatorTopic(
  topicName: TopicName,
  create: () => Promise<CreateTopicsResponseData.CreateTopicsResponseIn>,
  log: (level: 'warn', message: string) => void,
): Promise<boolean> {
  try {
    const r = await create()
    const t = r.topics?.[0]
    const errorCode = t?.errorCode ?? ErrorCode.None
    if (errorCode !== ErrorCode.None && errorCode !== ErrorCode.TopicAlreadyExists) {
      log('warn', `creating ${topicName} failed: error ${errorCode} ${t?.errorMessage ?? ''}`)
      return false
    }
    return true
  } catch (e) {
    log('warn', `creating ${topicName} failed: ${(e as Error).message}`)
    return false
  }
}

/**
 * AlterPartition (KIP-497, with KIP-841's broker-epoch checks): a partition leader proposes a new
 * ISR; the controller validates it against the latest image and writes a PartitionChangeRecord.
 * Pure, as Kafka's ReplicationControlManager.alterPartition.
 */
import { type MetadataImage, NO_LEADER, type TopicImage } from '../metadata/index.ts'
import type { BrokerId } from '../model/index.ts'
import {
  type AlterPartitionRequestData,
  type AlterPartitionResponseData,
  ErrorCode,
  metadataRecordTypes as T,
} from '../protocol/index.ts'
import { type Decision, type PendingRecord, pendingRecord } from './decision.ts'

/** PartitionRegistration.leaderRecoveryState values. */
const RECOVERED = 0
const RECOVERING = 1

type PartitionIn = AlterPartitionResponseData.PartitionDataIn

/**
 * Decides one AlterPartition request at `version` (2-3: topics by id). Top-level STALE_BROKER_EPOCH
 * when the sender's registration does not carry `brokerEpoch`; per partition, Kafka's checks in
 * Kafka's order:
 * - UNKNOWN_TOPIC_ID when it does not exist;
 * - NOT_CONTROLLER when the request's leader or partition epoch is ahead of this image (this node
 *   is likely a stale controller);
 * - INVALID_REQUEST when the sender is not the leader;
 * - FENCED_LEADER_EPOCH when the request's leader epoch is older;
 * - INVALID_UPDATE_VERSION when its partition epoch differs;
 * - INVALID_REQUEST when the new ISR is empty, has duplicates, names a non-replica, leaves out the
 *   leader, or breaks the leader-recovery rules;
 * - INELIGIBLE_REPLICA when a new member is unregistered, fenced, in controlled shutdown, or has
 *   another broker epoch than the one named (v3+).
 * A valid request whose ISR is the current one writes nothing and answers the current state.
 */
export function alterPartition(
  image: MetadataImage,
  req: AlterPartitionRequestData.AlterPartitionRequest,
  version: number,
): Decision<AlterPartitionResponseData.AlterPartitionResponseIn> {
  const sender = image.brokers.get(req.brokerId)
  if (sender === undefined || sender.epoch !== req.brokerEpoch) {
    return { records: [], response: { errorCode: ErrorCode.StaleBrokerEpoch, topics: [] } }
  }
  const records: PendingRecord[] = []
  const topics: AlterPartitionResponseData.TopicDataIn[] = []
  for (const t of req.topics) {
    const topic: TopicImage | undefined = image.topicsById.get(t.topicId)
    const partitions: PartitionIn[] = []
    for (const pd of t.partitions) {
      const fail = (errorCode: ErrorCode) =>
        partitions.push({ partitionIndex: pd.partitionIndex, errorCode, leaderId: NO_LEADER })
      const p = topic?.partitions.get(pd.partitionIndex)
      if (topic === undefined || p === undefined) {
        fail(ErrorCode.UnknownTopicId)
        continue
      }
      const newIsr: Array<{ id: BrokerId; epoch: bigint }> =
        version >= 3
          ? pd.newIsrWithEpochs.map((s) => ({ id: s.brokerId, epoch: s.brokerEpoch }))
          : pd.newIsr.map((id) => ({ id, epoch: -1n }))
      const error = validate(image, req.brokerId, p, pd, newIsr)
      if (error !== ErrorCode.None) {
        fail(error)
        continue
      }
      const isr = newIsr.map((s) => s.id)
      const recovery = pd.leaderRecoveryState
      const isrChanged = isr.length !== p.isr.length || isr.some((id, i) => p.isr[i] !== id)
      const recoveryChanged = recovery !== p.leaderRecoveryState
      let partitionEpoch = p.partitionEpoch
      if (isrChanged || recoveryChanged) {
        records.push(
          pendingRecord(T.PartitionChange, 0, {
            topicId: topic.id,
            partitionId: pd.partitionIndex,
            ...(isrChanged ? { isr } : {}),
            ...(recoveryChanged ? { leaderRecoveryState: recovery } : {}),
          }),
        )
        partitionEpoch += 1
      }
      partitions.push({
        partitionIndex: pd.partitionIndex,
        errorCode: ErrorCode.None,
        leaderId: p.leader,
        leaderEpoch: p.leaderEpoch,
        isr,
        leaderRecoveryState: recovery,
        partitionEpoch,
      })
    }
    topics.push({ topicId: t.topicId, partitions })
  }
  return { records, response: { errorCode: ErrorCode.None, topics } }
}

function validate(
  image: MetadataImage,
  sender: BrokerId,
  p: {
    leader: BrokerId
    leaderEpoch: number
    partitionEpoch: number
    replicas: readonly BrokerId[]
    leaderRecoveryState: number
  },
  pd: AlterPartitionRequestData.PartitionData,
  newIsr: ReadonlyArray<{ id: BrokerId; epoch: bigint }>,
): ErrorCode {
  // A request from the future: this controller's image is behind, so it is likely not the active one.
  if (pd.leaderEpoch > p.leaderEpoch || pd.partitionEpoch > p.partitionEpoch) return ErrorCode.NotController
  if (sender !== p.leader) return ErrorCode.InvalidRequest
  if (pd.leaderEpoch < p.leaderEpoch) return ErrorCode.FencedLeaderEpoch
  if (pd.partitionEpoch !== p.partitionEpoch) return ErrorCode.InvalidUpdateVersion
  const ids = newIsr.map((s) => s.id)
  if (ids.length === 0 || new Set(ids).size !== ids.length || ids.some((id) => !p.replicas.includes(id)))
    return ErrorCode.InvalidRequest
  if (!ids.includes(p.leader)) return ErrorCode.InvalidRequest
  const recovery = pd.leaderRecoveryState
  if (recovery !== RECOVERED && recovery !== RECOVERING) return ErrorCode.InvalidRequest
  if (recovery === RECOVERING && ids.length > 1) return ErrorCode.InvalidRequest
  if (p.leaderRecoveryState === RECOVERED && recovery === RECOVERING) return ErrorCode.InvalidRequest
  for (const s of newIsr) {
    const b = image.brokers.get(s.id)
    if (b === undefined || b.fenced || b.inControlledShutdown || (s.epoch !== -1n && s.epoch !== b.epoch))
      return ErrorCode.IneligibleReplica
  }
  return ErrorCode.None
}

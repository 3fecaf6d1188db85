/**
 * Leader changes that follow a broker's state: when a broker is fenced or shuts down, its
 * leaderships move to another live ISR member (or the partition waits leaderless, keeping its last
 * ISR member, as Kafka does); when a broker is unfenced, leaderless partitions it can lead get it
 * back. Clean elections only: a leader always comes from the ISR. Pure.
 */
import { type MetadataImage, NO_LEADER, type PartitionRegistration } from '../metadata/index.ts'
import type { BrokerId, TopicName } from '../model/index.ts'
import {
  type ElectLeadersRequestData,
  type ElectLeadersResponseData,
  ErrorCode,
  metadataRecordTypes as T,
} from '../protocol/index.ts'
import { type Decision, type PendingRecord, pendingRecord } from './decision.ts'

/** Whether a broker can lead or stay in the ISR: registered, unfenced, not shutting down. */
export type IsAlive = (id: BrokerId) => boolean

export function aliveIn(image: MetadataImage, except?: BrokerId): IsAlive {
  return (id) => {
    if (id === except) return false
    const b = image.brokers.get(id)
    return b !== undefined && !b.fenced && !b.inControlledShutdown
  }
}

/** The first live ISR member in replica order (Kafka's preferred-replica-first choice), or null. */
export function electLeader(p: PartitionRegistration, alive: IsAlive): BrokerId | null {
  for (const r of p.replicas) if (p.isr.includes(r) && alive(r)) return r
  return null
}

/**
 * Takes `broker` out of every partition it leads or is in the ISR of: a new leader from the live
 * ISR; the ISR without it unless it is the last member (then the partition waits leaderless with
 * that ISR, so no acknowledged write can be lost to an unclean election).
 */
export function moveAwayFrom(image: MetadataImage, broker: BrokerId): PendingRecord[] {
  const alive = aliveIn(image, broker)
  const records: PendingRecord[] = []
  for (const topic of image.topicsById.values()) {
    for (const [partitionId, p] of topic.partitions) {
      const inIsr = p.isr.includes(broker)
      if (p.leader !== broker && !inIsr) continue
      const isr = p.isr.length > 1 ? p.isr.filter((r) => r !== broker) : p.isr
      const leader =
        p.leader === broker || p.leader === NO_LEADER
          ? (electLeader({ ...p, isr }, alive) ?? NO_LEADER)
          : p.leader
      const leaderChanged = leader !== p.leader
      const isrChanged = isr.length !== p.isr.length
      if (!leaderChanged && !isrChanged) continue
      records.push(
        pendingRecord(T.PartitionChange, 0, {
          topicId: topic.id,
          partitionId,
          ...(isrChanged ? { isr } : {}),
          ...(leaderChanged ? { leader } : {}),
        }),
      )
    }
  }
  return records
}

/**
 * A broker reported offline log dirs (BrokerHeartbeat `OfflineLogDirs`): every partition it leads
 * goes to another live ISR member, which is left without it (its replica there may be on the failed
 * dir), where there is one; a partition with no other live ISR member keeps its leader (nothing
 * better exists). Weir does not assign replicas to directories (no AssignReplicasToDirs yet), so
 * the controller cannot tell which of the broker's partitions are on the failed dir and moves them
 * all: the broker stays a follower of the healthy ones and rejoins their ISRs as it fetches.
 */
export function moveLeadershipsAwayFrom(image: MetadataImage, broker: BrokerId): PendingRecord[] {
  const alive = aliveIn(image, broker)
  const records: PendingRecord[] = []
  for (const topic of image.topicsById.values()) {
    for (const [partitionId, p] of topic.partitions) {
      if (p.leader !== broker) continue
      const isr = p.isr.filter((r) => r !== broker)
      if (isr.length === 0) continue
      const leader = electLeader({ ...p, isr }, alive)
      if (leader === null) continue
      records.push(pendingRecord(T.PartitionChange, 0, { topicId: topic.id, partitionId, isr, leader }))
    }
  }
  return records
}

/** Elects a leader for every leaderless partition that now has a live ISR member. */
export function electLeaderless(image: MetadataImage, alive: IsAlive): PendingRecord[] {
  const records: PendingRecord[] = []
  for (const topic of image.topicsById.values()) {
    for (const [partitionId, p] of topic.partitions) {
      if (p.leader !== NO_LEADER) continue
      const leader = electLeader(p, alive)
      if (leader !== null)
        records.push(pendingRecord(T.PartitionChange, 0, { topicId: topic.id, partitionId, leader }))
    }
  }
  return records
}

/** ElectLeadersRequest.ElectionType. */
export const ElectionType = { Preferred: 0, Unclean: 1 } as const

/**
 * ElectLeaders (KIP-460): a preferred election gives each named partition to its first replica
 * when that replica is alive and in the ISR; an unclean election gives a leaderless partition to
 * its first live replica even outside the ISR (acknowledged writes may be lost: the operator asked).
 * `topicPartitions` null means every partition, and then only attempted elections are answered.
 */
export function electLeaders(
  image: MetadataImage,
  req: ElectLeadersRequestData.ElectLeadersRequest,
  version: number,
): Decision<ElectLeadersResponseData.ElectLeadersResponseIn> {
  const type = version >= 1 ? req.electionType : ElectionType.Preferred
  if (type !== ElectionType.Preferred && type !== ElectionType.Unclean) {
    return { records: [], response: { errorCode: ErrorCode.InvalidRequest, replicaElectionResults: [] } }
  }
  const alive = aliveIn(image)
  const wanted: Array<{ topic: TopicName; partitions: number[] }> =
    req.topicPartitions ??
    [...image.topicsByName.values()].map((t) => ({ topic: t.name, partitions: [...t.partitions.keys()] }))
  const all = req.topicPartitions === null
  const records: PendingRecord[] = []
  const results: ElectLeadersResponseData.ReplicaElectionResultIn[] = []
  for (const w of wanted) {
    const topic = image.topicsByName.get(w.topic)
    const partitionResult: ElectLeadersResponseData.PartitionResultIn[] = []
    for (const partitionId of [...new Set(w.partitions)]) {
      const p = topic?.partitions.get(partitionId)
      const answer = (errorCode: ErrorCode, errorMessage: string | null) =>
        partitionResult.push({ partitionId, errorCode, errorMessage })
      if (topic === undefined || p === undefined) {
        answer(ErrorCode.UnknownTopicOrPartition, 'The partition does not exist.')
        continue
      }
      if (type === ElectionType.Preferred) {
        const preferred = p.replicas[0]
        if (preferred === undefined || p.leader === preferred) {
          if (!all) answer(ErrorCode.ElectionNotNeeded, 'Leader election not needed for topic partition.')
          continue
        }
        if (!p.isr.includes(preferred) || !alive(preferred)) {
          answer(
            ErrorCode.PreferredLeaderNotAvailable,
            `Failed to elect leader for partition ${w.topic}-${partitionId} under strategy PreferredReplicaPartitionLeaderElectionStrategy`,
          )
          continue
        }
        records.push(
          pendingRecord(T.PartitionChange, 0, { topicId: topic.id, partitionId, leader: preferred }),
        )
        answer(ErrorCode.None, null)
        continue
      }
      if (p.leader !== NO_LEADER) {
        if (!all) answer(ErrorCode.ElectionNotNeeded, 'Leader election not needed for topic partition.')
        continue
      }
      const leader = electLeader(p, alive) ?? p.replicas.find((r) => alive(r))
      if (leader === undefined) {
        answer(
          ErrorCode.EligibleLeadersNotAvailable,
          `Failed to elect leader for partition ${w.topic}-${partitionId} under strategy UncleanLeaderElectionStrategy`,
        )
        continue
      }
      const clean = p.isr.includes(leader)
      records.push(
        pendingRecord(T.PartitionChange, 0, {
          topicId: topic.id,
          partitionId,
          leader,
          ...(clean ? {} : { isr: [leader], leaderRecoveryState: 1 }),
        }),
      )
      answer(ErrorCode.None, null)
    }
    if (partitionResult.length > 0) results.push({ topic: w.topic, partitionResult })
  }
  return { records, response: { errorCode: ErrorCode.None, replicaElectionResults: results } }
}

/**
 * Partition reassignment (KIP-455), as Kafka's ReplicationControlManager does it: a reassignment
 * writes replicas = target ∪ current (target first), addingReplicas = target − current,
 * removingReplicas = current − target; it completes once every adding replica is in the ISR
 * (followers join it through AlterPartition as they catch up): replicas = target, ISR ∩ target,
 * and a new leader from the target when the old one is removed. A cancel reverts to the original
 * replicas. Pure.
 */
import { type MetadataImage, NO_LEADER, type PartitionRegistration } from '../metadata/index.ts'
import type { BrokerId, TopicName, Uuid } from '../model/index.ts'
import {
  type AlterPartitionReassignmentsRequestData,
  type AlterPartitionReassignmentsResponseData,
  ErrorCode,
  type ListPartitionReassignmentsRequestData,
  type ListPartitionReassignmentsResponseData,
  metadataRecordTypes as T,
} from '../protocol/index.ts'
import { type Decision, type PendingRecord, pendingRecord } from './decision.ts'
import { aliveIn, type IsAlive } from './elections.ts'

/** A partition's replica sets as a reassignment leaves them. */
export interface ReplicaSets {
  readonly replicas: readonly BrokerId[]
  readonly isr: readonly BrokerId[]
  readonly adding: readonly BrokerId[]
  readonly removing: readonly BrokerId[]
  readonly leader: BrokerId
}

export function isReassigning(p: PartitionRegistration): boolean {
  return p.addingReplicas.length > 0 || p.removingReplicas.length > 0
}

/** The partition as it was before its ongoing reassignment (Kafka's PartitionReassignmentRevert). */
export function revertedSets(p: PartitionRegistration): ReplicaSets {
  const adding = new Set(p.addingReplicas)
  const replicas = p.replicas.filter((r) => !adding.has(r))
  const isr = p.isr.filter((r) => !adding.has(r))
  return { replicas, isr, adding: [], removing: [], leader: p.leader }
}

/** Starts a reassignment from `current` toward `target` (Kafka's PartitionReassignmentReplicas). */
export function startedSets(current: ReplicaSets, target: readonly BrokerId[]): ReplicaSets {
  const inTarget = new Set(target)
  const inCurrent = new Set(current.replicas)
  const removing = current.replicas.filter((r) => !inTarget.has(r))
  const adding = target.filter((r) => !inCurrent.has(r))
  return { replicas: [...target, ...removing], isr: current.isr, adding, removing, leader: current.leader }
}

/**
 * Completes a reassignment whose adding replicas are all in the ISR: replicas = target, ISR ∩
 * target (never empty: a reassignment that would leave no ISR waits), and a leader from the
 * target's live ISR when the leader is removed. Returns null while the reassignment must wait.
 */
export function completedSets(s: ReplicaSets, alive: IsAlive): ReplicaSets | null {
  if (s.adding.length === 0 && s.removing.length === 0) return null
  if (!s.adding.every((r) => s.isr.includes(r))) return null
  const removing = new Set(s.removing)
  const replicas = s.replicas.filter((r) => !removing.has(r))
  const isr = s.isr.filter((r) => !removing.has(r))
  if (isr.length === 0) return null
  let leader = s.leader
  if (leader === NO_LEADER || !isr.includes(leader) || !alive(leader)) {
    leader = replicas.find((r) => isr.includes(r) && alive(r)) ?? NO_LEADER
  }
  return { replicas, isr, adding: [], removing: [], leader }
}

const sameList = (a: readonly BrokerId[], b: readonly BrokerId[]) =>
  a.length === b.length && a.every((x, i) => x === b[i])

/** The PartitionChangeRecord taking `p` to `s` (only changed fields), or null when nothing changes. */
export function changeRecord(
  topicId: Uuid,
  partitionId: number,
  p: PartitionRegistration,
  s: ReplicaSets,
): PendingRecord | null {
  const replicas = sameList(s.replicas, p.replicas) ? undefined : [...s.replicas]
  const isr = sameList(s.isr, p.isr) ? undefined : [...s.isr]
  const adding = sameList(s.adding, p.addingReplicas) ? undefined : [...s.adding]
  const removing = sameList(s.removing, p.removingReplicas) ? undefined : [...s.removing]
  const leader = s.leader === p.leader ? undefined : s.leader
  if (
    replicas === undefined &&
    isr === undefined &&
    adding === undefined &&
    removing === undefined &&
    leader === undefined
  )
    return null
  return pendingRecord(T.PartitionChange, 0, {
    topicId,
    partitionId,
    ...(replicas === undefined ? {} : { replicas }),
    ...(isr === undefined ? {} : { isr }),
    ...(adding === undefined ? {} : { addingReplicas: adding }),
    ...(removing === undefined ? {} : { removingReplicas: removing }),
    ...(leader === undefined ? {} : { leader }),
  })
}

const setsOf = (p: PartitionRegistration): ReplicaSets => ({
  replicas: p.replicas,
  isr: p.isr,
  adding: p.addingReplicas,
  removing: p.removingReplicas,
  leader: p.leader,
})

/** Kafka's validateManualPartitionAssignment for a reassignment target; null when valid. */
function targetProblem(image: MetadataImage, target: readonly BrokerId[]): string | null {
  if (target.length === 0) return 'The manual partition assignment includes an empty replica list.'
  if (new Set(target).size !== target.length)
    return `The manual partition assignment includes the partition with duplicate replicas: ${target.join(', ')}`
  for (const id of target) {
    if (!image.brokers.has(id))
      return `The manual partition assignment includes broker ${id}, but no such broker is registered.`
  }
  return null
}

/** AlterPartitionReassignments v0: start, replace or cancel (replicas null) each named reassignment. */
export function alterPartitionReassignments(
  image: MetadataImage,
  req: AlterPartitionReassignmentsRequestData.AlterPartitionReassignmentsRequest,
): Decision<AlterPartitionReassignmentsResponseData.AlterPartitionReassignmentsResponseIn> {
  const alive = aliveIn(image)
  const records: PendingRecord[] = []
  const responses: AlterPartitionReassignmentsResponseData.ReassignableTopicResponseIn[] = []
  for (const t of req.topics) {
    const topic = image.topicsByName.get(t.name)
    const partitions: AlterPartitionReassignmentsResponseData.ReassignablePartitionResponseIn[] = []
    for (const rp of t.partitions) {
      const answer = (errorCode: ErrorCode, errorMessage: string | null) =>
        partitions.push({ partitionIndex: rp.partitionIndex, errorCode, errorMessage })
      const p = topic?.partitions.get(rp.partitionIndex)
      if (topic === undefined || p === undefined) {
        answer(ErrorCode.UnknownTopicOrPartition, 'This server does not host this topic-partition.')
        continue
      }
      let next: ReplicaSets
      if (rp.replicas === null) {
        if (!isReassigning(p)) {
          answer(ErrorCode.NoReassignmentInProgress, null)
          continue
        }
        next = revertedSets(p)
        if (next.isr.length === 0) next = { ...next, isr: p.isr }
        if (!next.replicas.includes(next.leader) || !next.isr.includes(next.leader)) {
          const leader = next.replicas.find((r) => next.isr.includes(r) && alive(r)) ?? NO_LEADER
          next = { ...next, leader }
        }
      } else {
        const problem = targetProblem(image, rp.replicas)
        if (problem !== null) {
          answer(ErrorCode.InvalidReplicaAssignment, problem)
          continue
        }
        const reverted = revertedSets(p)
        next = startedSets(reverted.isr.length === 0 ? { ...reverted, isr: p.isr } : reverted, rp.replicas)
        next = completedSets(next, alive) ?? next
      }
      const record = changeRecord(topic.id, rp.partitionIndex, p, next)
      if (record !== null) records.push(record)
      answer(ErrorCode.None, null)
    }
    responses.push({ name: t.name, partitions })
  }
  return {
    records,
    response: { throttleTimeMs: 0, errorCode: ErrorCode.None, errorMessage: null, responses },
  }
}

/** ListPartitionReassignments v0: the ongoing reassignments, of every topic when `topics` is null. */
export function listPartitionReassignments(
  image: MetadataImage,
  req: ListPartitionReassignmentsRequestData.ListPartitionReassignmentsRequest,
): ListPartitionReassignmentsResponseData.ListPartitionReassignmentsResponseIn {
  const wanted: Array<{ name: TopicName; partitions: number[] | null }> =
    req.topics === null
      ? [...image.topicsByName.keys()].sort().map((name) => ({ name, partitions: null }))
      : req.topics.map((t) => ({ name: t.name, partitions: t.partitionIndexes }))
  const topics: ListPartitionReassignmentsResponseData.OngoingTopicReassignmentIn[] = []
  for (const w of wanted) {
    const topic = image.topicsByName.get(w.name)
    if (topic === undefined) continue
    const indexes = w.partitions ?? [...topic.partitions.keys()].sort((a, b) => a - b)
    const partitions: ListPartitionReassignmentsResponseData.OngoingPartitionReassignmentIn[] = []
    for (const i of indexes) {
      const p = topic.partitions.get(i)
      if (p === undefined || !isReassigning(p)) continue
      partitions.push({
        partitionIndex: i,
        replicas: [...p.replicas],
        addingReplicas: [...p.addingReplicas],
        removingReplicas: [...p.removingReplicas],
      })
    }
    if (partitions.length > 0) topics.push({ name: w.name, partitions })
  }
  return { throttleTimeMs: 0, errorCode: ErrorCode.None, errorMessage: null, topics }
}

/**
 * Completes every reassignment whose adding replicas have all joined the ISR (run after each
 * commit that changed partitions, as Kafka completes them while handling AlterPartition).
 */
export function completeReassignments(
  image: MetadataImage,
  alive: IsAlive = aliveIn(image),
): PendingRecord[] {
  const records: PendingRecord[] = []
  for (const topic of image.topicsById.values()) {
    for (const [partitionId, p] of topic.partitions) {
      if (!isReassigning(p)) continue
      const done = completedSets(setsOf(p), alive)
      if (done === null) continue
      const record = changeRecord(topic.id, partitionId, p, done)
      if (record !== null) records.push(record)
    }
  }
  return records
}

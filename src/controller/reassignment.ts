/**
 * Partition reassignment (KIP-455), as Kafka 4.0's ReplicationControlManager does it, from the
 * partition's current replicas (those of an ongoing reassignment included):
 * - a reassignment writes replicas = target, then removing; removing = current − target and
 *   adding = target − current, each ascending (Kafka's PartitionReassignmentReplicas);
 * - it completes once every replica left after the removals is in the ISR: replicas and ISR
 *   without the removing ones, when that ISR is not empty (Kafka's maybeCompleteReassignment);
 *   when the target is already in the ISR, the same record completes it;
 * - a cancel reverts: replicas and ISR without the adding ones (Kafka's
 *   PartitionReassignmentRevert); an ISR that would be empty becomes [first replica], an unclean
 *   election, refused unless the topic allows one.
 * Every change keeps the leader when it stays in the ISR and alive, else elects the first replica
 * in the ISR and alive, else leaves the partition leaderless; it bumps the leader epoch when
 * replicas are removed (Kafka's triggerLeaderEpochBumpForReplicaReassignmentIfNeeded). So the
 * leader is always in the ISR and the ISR within the replicas. Pure.
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
import type { NodeConfigSource } from './configs.ts'
import { type Decision, type PendingRecord, pendingRecord } from './decision.ts'
import { aliveIn, type IsAlive } from './elections.ts'
import { uncleanAllowed } from './leadership.ts'

/** PartitionRegistration.leaderRecoveryState RECOVERING: the leader of an unclean election. */
const RECOVERING = 1

/** A partition's replica sets as a reassignment leaves them. */
export interface ReplicaSets {
  readonly replicas: readonly BrokerId[]
  readonly isr: readonly BrokerId[]
  readonly adding: readonly BrokerId[]
  readonly removing: readonly BrokerId[]
  readonly leader: BrokerId
  /** Set by an unclean election: the new leader must recover its log first. */
  readonly recovering?: boolean
}

export function isReassigning(p: PartitionRegistration): boolean {
  return p.addingReplicas.length > 0 || p.removingReplicas.length > 0
}

/** `a` without the members of `b`, in `a`'s order. */
const without = (a: readonly BrokerId[], b: readonly BrokerId[]): BrokerId[] => {
  const out = new Set(b)
  return a.filter((r) => !out.has(r))
}

const ascending = (a: readonly BrokerId[]): BrokerId[] => [...a].sort((x, y) => x - y)

/**
 * The leader Kafka's PartitionChangeBuilder elects (an ONLINE election): the current one while it
 * is in the ISR and alive, else the first replica in the ISR and alive, else none.
 */
export function withLeader(s: ReplicaSets, alive: IsAlive): ReplicaSets {
  if (s.leader !== NO_LEADER && s.isr.includes(s.leader) && alive(s.leader)) return s
  const leader = s.replicas.find((r) => s.isr.includes(r) && alive(r)) ?? NO_LEADER
  return leader === s.leader ? s : { ...s, leader }
}

/**
 * The partition as a cancel leaves it (Kafka's PartitionReassignmentRevert): replicas and ISR
 * without the adding replicas, so the replicas before the reassignment; `unclean` when no ISR
 * member would be left, and then the ISR is [first replica]. Null when no replica would be left.
 */
export function revertedSets(p: ReplicaSets): { sets: ReplicaSets; unclean: boolean } | null {
  const replicas = without(p.replicas, p.adding)
  if (replicas.length === 0) return null
  const isr = without(p.isr, p.adding)
  const unclean = isr.length === 0
  return {
    sets: { replicas, isr: unclean ? [replicas[0]!] : isr, adding: [], removing: [], leader: p.leader },
    unclean,
  }
}

/**
 * Starts (or replaces) a reassignment of `current` toward `target` (Kafka's
 * PartitionReassignmentReplicas over the current replicas, ongoing reassignment included). The ISR
 * and the leader are unchanged: every current replica stays a replica until completion.
 *
 * Where the new reassignment adds nothing, Kafka keeps the ongoing one's adding list, so a cancel
 * still reverts to the replicas before it; Weir does the same. Where it removes nothing, Kafka
 * also keeps the ongoing one's removing list, and then completes to the replicas without them,
 * not to the target asked for; Weir writes the empty list, so the target is what it completes to
 * (docs/compatibility.md).
 */
export function startedSets(current: ReplicaSets, target: readonly BrokerId[]): ReplicaSets {
  const removing = ascending(without(current.replicas, target))
  const adding = ascending(without(target, current.replicas))
  return {
    replicas: [...target, ...removing],
    isr: current.isr,
    adding: adding.length > 0 ? adding : current.adding,
    removing,
    leader: current.leader,
  }
}

/**
 * Completes a reassignment once every replica left after the removals is in the ISR (Kafka's
 * maybeCompleteReassignment): replicas and ISR without the removing ones, never an empty ISR (such
 * a reassignment waits), a leader from the ISR left. Null while the reassignment must wait.
 */
export function completedSets(s: ReplicaSets, alive: IsAlive): ReplicaSets | null {
  if (s.adding.length === 0 && s.removing.length === 0) return null
  const isr = without(s.isr, s.removing)
  const replicas = without(s.replicas, s.removing)
  if (isr.length === 0 || replicas.length === 0) return null
  if (!replicas.every((r) => isr.includes(r))) return null
  return withLeader({ replicas, isr, adding: [], removing: [], leader: s.leader }, alive)
}

const sameList = (a: readonly BrokerId[], b: readonly BrokerId[]) =>
  a.length === b.length && a.every((x, i) => x === b[i])

/**
 * The PartitionChangeRecord taking `p` to `s` (only changed fields), or null when nothing changes.
 * The leader field is written, so the leader epoch moves, when the leader changes or when replicas
 * are removed (Kafka's triggerLeaderEpochBumpForReplicaReassignmentIfNeeded).
 */
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
  const replicaRemoved = p.replicas.some((r) => !s.replicas.includes(r))
  const leader = s.leader !== p.leader || replicaRemoved ? s.leader : undefined
  const recovering = s.recovering === true && p.leaderRecoveryState !== RECOVERING
  if (
    replicas === undefined &&
    isr === undefined &&
    adding === undefined &&
    removing === undefined &&
    leader === undefined &&
    !recovering
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
    ...(recovering ? { leaderRecoveryState: RECOVERING } : {}),
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

/**
 * AlterPartitionReassignments v0: start, replace or cancel (replicas null) each named
 * reassignment. `node` resolves `unclean.leader.election.enable` for a cancel that needs an
 * unclean election.
 */
export function alterPartitionReassignments(
  image: MetadataImage,
  req: AlterPartitionReassignmentsRequestData.AlterPartitionReassignmentsRequest,
  node: NodeConfigSource,
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
        const reverted = revertedSets(setsOf(p))
        if (reverted === null) {
          answer(
            ErrorCode.InvalidReplicaAssignment,
            'Invalid replica assignment: addingReplicas contains all replicas.',
          )
          continue
        }
        const unclean = uncleanAllowed(image, topic.name, node)
        if (reverted.unclean && !unclean) {
          answer(
            ErrorCode.InvalidReplicaAssignment,
            `Unable to revert partition assignment for ${topic.name}:${rp.partitionIndex} because it would require an unclean leader election.`,
          )
          continue
        }
        next = withLeader(reverted.sets, alive)
        if (next.leader === NO_LEADER && unclean) {
          // Kafka's UNCLEAN election on a cancel: the first live replica, ISR [it], recovering.
          const leader = next.replicas.find((r) => alive(r))
          if (leader !== undefined) next = { ...next, leader, isr: [leader], recovering: true }
        }
      } else {
        const problem = targetProblem(image, rp.replicas)
        if (problem !== null) {
          answer(ErrorCode.InvalidReplicaAssignment, problem)
          continue
        }
        const started = startedSets(setsOf(p), rp.replicas)
        next = completedSets(started, alive) ?? withLeader(started, alive)
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
 * Completes every reassignment whose remaining replicas have all joined the ISR (run after each
 * commit that changed partitions; Kafka completes them in the AlterPartition record itself).
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

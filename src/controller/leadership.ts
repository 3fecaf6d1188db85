/**
 * Leader decisions the controller takes on its own, besides the clean moves in elections.ts:
 * unclean elections of leaderless partitions whose topic allows them
 * (`unclean.leader.election.enable`, topic config over the broker layers, default false), and the
 * automatic preferred-leader rebalance (`auto.leader.rebalance.enable`,
 * `leader.imbalance.per.broker.percentage`). Pure: the controller shell runs them after commits and
 * on its Clock.
 */
import { resolveTopicConfig } from '../config/index.ts'
import { type MetadataImage, NO_LEADER } from '../metadata/index.ts'
import type { BrokerId, TopicName } from '../model/index.ts'
import { metadataRecordTypes as T } from '../protocol/index.ts'
import { type NodeConfigSource, topicConfigLayers } from './configs.ts'
import { type PendingRecord, pendingRecord } from './decision.ts'
import { aliveIn, electLeader, type IsAlive } from './elections.ts'

/** Whether `topic` allows unclean leader election, as this controller node resolves its configs. */
export function uncleanAllowed(image: MetadataImage, topic: TopicName, node: NodeConfigSource): boolean {
  return resolveTopicConfig(topicConfigLayers(image, topic, node)).boolean('unclean.leader.election.enable')
}

/**
 * Leaderless partitions with no live ISR member, of topics that allow unclean election: the first
 * live replica leads with ISR = [it] and leaderRecoveryState RECOVERING (1), as Kafka 4 elects.
 * Partitions with a live ISR member are left to the clean election (electLeaderless).
 */
export function uncleanElections(
  image: MetadataImage,
  node: NodeConfigSource,
  alive: IsAlive = aliveIn(image),
): PendingRecord[] {
  const records: PendingRecord[] = []
  for (const topic of image.topicsById.values()) {
    let allowed: boolean | undefined
    for (const [partitionId, p] of topic.partitions) {
      if (p.leader !== NO_LEADER) continue
      const clean = electLeader(p, alive)
      if (clean !== null) {
        records.push(pendingRecord(T.PartitionChange, 0, { topicId: topic.id, partitionId, leader: clean }))
        continue
      }
      allowed ??= uncleanAllowed(image, topic.name, node)
      if (!allowed) continue
      const leader = p.replicas.find((r) => alive(r))
      if (leader === undefined) continue
      records.push(
        pendingRecord(T.PartitionChange, 0, {
          topicId: topic.id,
          partitionId,
          leader,
          isr: [leader],
          leaderRecoveryState: 1,
        }),
      )
    }
  }
  return records
}

/** Whether any leaderless partition could get a leader now (cheap pre-check for the shell). */
export function hasLeaderless(image: MetadataImage): boolean {
  for (const topic of image.topicsById.values())
    for (const p of topic.partitions.values())
      if (p.leader === NO_LEADER && p.replicas.length > 0) return true
  return false
}

/** Each broker's preferred-leader imbalance: partitions it should lead but does not / it should lead. */
export function leaderImbalance(image: MetadataImage): Map<BrokerId, { preferred: number; notLed: number }> {
  const out = new Map<BrokerId, { preferred: number; notLed: number }>()
  for (const topic of image.topicsById.values()) {
    for (const p of topic.partitions.values()) {
      const preferred = p.replicas[0]
      if (preferred === undefined) continue
      const e = out.get(preferred) ?? { preferred: 0, notLed: 0 }
      e.preferred++
      if (p.leader !== preferred) e.notLed++
      out.set(preferred, e)
    }
  }
  return out
}

/**
 * The automatic preferred-leader rebalance: for every broker whose share of partitions it prefers
 * but does not lead exceeds `percentage` %, leadership of those partitions moves back to it when it
 * is alive and in the ISR (and not in a reassignment that removes it).
 */
export function rebalancePreferredLeaders(
  image: MetadataImage,
  percentage: number,
  alive: IsAlive = aliveIn(image),
): PendingRecord[] {
  const imbalance = leaderImbalance(image)
  const records: PendingRecord[] = []
  for (const topic of image.topicsById.values()) {
    for (const [partitionId, p] of topic.partitions) {
      const preferred = p.replicas[0]
      if (preferred === undefined || p.leader === preferred) continue
      const e = imbalance.get(preferred)
      if (e === undefined || (e.notLed * 100) / e.preferred <= percentage) continue
      if (!alive(preferred) || !p.isr.includes(preferred) || p.removingReplicas.includes(preferred)) continue
      records.push(pendingRecord(T.PartitionChange, 0, { topicId: topic.id, partitionId, leader: preferred }))
    }
  }
  return records
}

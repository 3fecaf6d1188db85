/**
 * Replica placement for new partitions: spread leaders and followers evenly over the usable
 * brokers, and over racks when brokers have them. Pure: the random start comes from the caller.
 */
import type { BrokerId } from '../model/index.ts'

export interface PlacementBroker {
  readonly id: BrokerId
  readonly rack: string | null
}

export class PlacementError extends Error {
  override name = 'PlacementError'
}

/**
 * Orders brokers so that consecutive ones sit in different racks where possible: racks in name
 * order, brokers in id order within a rack, taken one per rack in turn (rack1-a, rack2-a, rack1-b,
 * ...). Brokers without a rack form one group of their own.
 */
export function rackAlternatedOrder(brokers: readonly PlacementBroker[]): BrokerId[] {
  const byRack = new Map<string, BrokerId[]>()
  for (const b of [...brokers].sort((x, y) => x.id - y.id)) {
    const key = b.rack ?? ''
    let list = byRack.get(key)
    if (list === undefined) {
      list = []
      byRack.set(key, list)
    }
    list.push(b.id)
  }
  const racks = [...byRack.keys()].sort().map((r) => byRack.get(r)!)
  const out: BrokerId[] = []
  for (let i = 0; out.length < brokers.length; i++) {
    for (const list of racks) {
      const id = list[i]
      if (id !== undefined) out.push(id)
    }
  }
  return out
}

/**
 * Assigns `replicationFactor` replicas to each of `partitionCount` new partitions numbered from
 * `firstPartition`, in the manner of Kafka's classic assignment: the first replica walks the
 * (rack-alternated) broker list from `startIndex`; followers follow at a shift that changes after
 * each full round, so leadership and followers both spread evenly; when racks exist, a follower
 * goes to a rack the partition does not use yet whenever one is left.
 *
 * `startIndex` and `shift` should be random per call (the caller's Random port) so that many small
 * topics do not all lead on the same broker.
 */
export function placeReplicas(
  brokers: readonly PlacementBroker[],
  spec: { partitionCount: number; replicationFactor: number; firstPartition?: number },
  options: { startIndex: number; shift: number },
): BrokerId[][] {
  const { partitionCount, replicationFactor } = spec
  if (replicationFactor <= 0) throw new PlacementError(`replication factor must be larger than 0`)
  if (partitionCount <= 0) throw new PlacementError(`number of partitions must be larger than 0`)
  if (replicationFactor > brokers.length) {
    throw new PlacementError(
      `replication factor ${replicationFactor} is larger than the ${brokers.length} available brokers`,
    )
  }
  const order = rackAlternatedOrder(brokers)
  const rackOf = new Map(brokers.map((b) => [b.id, b.rack]))
  const racks = new Set(brokers.map((b) => b.rack))
  const n = order.length
  const first = spec.firstPartition ?? 0
  const out: BrokerId[][] = []
  for (let i = 0; i < partitionCount; i++) {
    const p = first + i
    const leaderIndex = (options.startIndex + p) % n
    // The shift grows after each full round of leaders, so followers vary between rounds.
    const shift = (options.shift + Math.floor(p / n)) % Math.max(n - 1, 1)
    const replicas: BrokerId[] = [order[leaderIndex]!]
    const usedRacks = new Set([rackOf.get(order[leaderIndex]!)])
    for (let j = 0; replicas.length < replicationFactor; j++) {
      // Candidates in the classic order; prefer one in an unused rack while racks remain unused.
      let chosen: BrokerId | undefined
      for (let k = 0; k < n - 1; k++) {
        const idx = (leaderIndex + 1 + ((shift + j + k) % (n - 1))) % n
        const candidate = order[idx]!
        if (replicas.includes(candidate)) continue
        const rack = rackOf.get(candidate)
        if (usedRacks.size < racks.size && usedRacks.has(rack)) continue
        chosen = candidate
        break
      }
      if (chosen === undefined) {
        // Every rack is used (or only used racks remain): take the next broker in classic order.
        for (let k = 0; k < n - 1 && chosen === undefined; k++) {
          const candidate = order[(leaderIndex + 1 + ((shift + j + k) % (n - 1))) % n]!
          if (!replicas.includes(candidate)) chosen = candidate
        }
      }
      if (chosen === undefined) throw new PlacementError('no broker left for a replica')
      replicas.push(chosen)
      usedRacks.add(rackOf.get(chosen))
    }
    out.push(replicas)
  }
  return out
}

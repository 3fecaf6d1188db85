/**
 * KIP-392 read-replica selection, as Kafka's `ReplicaManager.findPreferredReadReplica` with
 * `org.apache.kafka.common.replica.RackAwareReplicaSelector`: a leader asked by a consumer that
 * names its rack points it at an in-sync follower in that rack which has the fetch offset (the most
 * caught-up one; the leader itself when it is in the rack). Pure.
 */
import type { BrokerId } from '../model/index.ts'

/** `replica.selector.class` values Weir knows. */
export const RACK_AWARE_REPLICA_SELECTOR = 'org.apache.kafka.common.replica.RackAwareReplicaSelector'
export const LEADER_SELECTOR = 'org.apache.kafka.common.replica.LeaderSelector'

export type ReplicaSelectorKind = 'rack-aware' | 'leader'

/** The selector `replica.selector.class` names: null (Kafka's default: no selection), or a known class. */
export function replicaSelectorOf(className: string | null): ReplicaSelectorKind | null {
  if (className === null || className === '') return null
  if (className === RACK_AWARE_REPLICA_SELECTOR) return 'rack-aware'
  if (className === LEADER_SELECTOR) return 'leader'
  throw new Error(`replica.selector.class ${className} is not a selector Weir knows`)
}

export interface ReadReplicaCandidate {
  readonly id: BrokerId
  readonly rack: string | null
  readonly logEndOffset: bigint
  /** Monotonic time of its last fetch (more recent is more caught up); -1 when never. */
  readonly lastFetchMs: number
}

export interface ReadReplicaQuestion {
  readonly leader: { readonly id: BrokerId; readonly rack: string | null }
  /** The other replicas in the ISR, with what the leader knows of them. */
  readonly followers: readonly ReadReplicaCandidate[]
  readonly fetchOffset: bigint
  /** The consumer's rack (Fetch v11+ rackId); '' when it named none. */
  readonly clientRack: string
}

/**
 * The preferred read replica to answer, or null to serve from the leader: only a follower in the
 * client's rack, in the ISR, whose log reaches the fetch offset; the leader wins when it is in
 * the rack.
 */
export function selectReadReplica(kind: ReplicaSelectorKind, q: ReadReplicaQuestion): BrokerId | null {
  if (kind !== 'rack-aware' || q.clientRack === '') return null
  if (q.leader.rack === q.clientRack) return null
  let best: ReadReplicaCandidate | null = null
  for (const f of q.followers) {
    if (f.rack !== q.clientRack || f.logEndOffset < q.fetchOffset) continue
    if (
      best === null ||
      f.logEndOffset > best.logEndOffset ||
      (f.logEndOffset === best.logEndOffset && f.lastFetchMs > best.lastFetchMs) ||
      (f.logEndOffset === best.logEndOffset && f.lastFetchMs === best.lastFetchMs && f.id < best.id)
    )
      best = f
  }
  return best?.id ?? null
}

/**
 * KIP-951 leader hints: with NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH, Produce v10+ and Fetch
 * v12+ name the partition's current leader and epoch (and v16+ its endpoint), so a client can move
 * without a Metadata round trip. Read from the metadata image.
 */
import type { MetadataImage } from '../../metadata/index.ts'
import { type BrokerId, TopicName } from '../../model/index.ts'
import { ErrorCode } from '../../protocol/index.ts'

/** Errors that come with a leader hint. */
export function wantsLeaderHint(errorCode: ErrorCode): boolean {
  return errorCode === ErrorCode.NotLeaderOrFollower || errorCode === ErrorCode.FencedLeaderEpoch
}

/** The partition's leader and leader epoch in the image, or null when it has none. */
export function currentLeaderOf(
  image: MetadataImage,
  topic: string,
  partition: number,
): { leaderId: BrokerId; leaderEpoch: number } | null {
  const reg = image.topicsByName.get(TopicName(topic))?.partitions.get(partition)
  if (reg === undefined || reg.leader < 0) return null
  return { leaderId: reg.leader, leaderEpoch: reg.leaderEpoch }
}

/** The endpoints on `listenerName` of the given brokers, for `nodeEndpoints`. */
export function nodeEndpointsOf(
  image: MetadataImage,
  ids: Iterable<BrokerId>,
  listenerName: string,
): Array<{ nodeId: BrokerId; host: string; port: number; rack: string | null }> {
  const out: Array<{ nodeId: BrokerId; host: string; port: number; rack: string | null }> = []
  for (const id of new Set(ids)) {
    const b = image.brokers.get(id)
    const e = b?.endpoints.find((x) => x.name === listenerName)
    if (b !== undefined && e !== undefined) out.push({ nodeId: id, host: e.host, port: e.port, rack: b.rack })
  }
  return out.sort((a, b) => a.nodeId - b.nodeId)
}

/**
 * The transaction coordinator's markers over the wire, as Kafka's TransactionMarkerChannelManager:
 * each attempt groups a transaction's partitions by their current leader in the metadata image and
 * sends each leader (this broker too) one WriteTxnMarkers v1 on its `inter.broker.listener.name`
 * endpoint, with the inter-broker security. A topic gone from the image answers
 * UNKNOWN_TOPIC_OR_PARTITION (the coordinator drops it); a leader's own UNKNOWN_TOPIC_OR_PARTITION
 * (it does not host the partition yet, or its directory is offline) is retried as
 * NOT_LEADER_OR_FOLLOWER, as Kafka's TransactionMarkerRequestCompletionHandler retries it; a
 * partition without a leader, or whose leader cannot be reached, NOT_LEADER_OR_FOLLOWER or
 * NETWORK_EXCEPTION (retried).
 */
import type { ClientSecurity, KafkaConnection } from '../client/index.ts'
import { type TxnMarker, type TxnMarkerChannel, txnPartitionKey } from '../coordinator/index.ts'
import type { Clock, Transport } from '../io/index.ts'
import { type MetadataImage, NO_LEADER } from '../metadata/index.ts'
import { type BrokerId, ProducerId, type TopicName } from '../model/index.ts'
import { apis, ErrorCode } from '../protocol/index.ts'
import { BrokerConnections } from './broker-connections.ts'

export interface WireTxnMarkerChannelOptions {
  readonly nodeId: BrokerId
  readonly image: () => MetadataImage
  /** `inter.broker.listener.name`; null: the leader's first registered endpoint. */
  readonly listenerName: string | null
  readonly security?: ClientSecurity
  readonly clock: Clock
  readonly transport: Transport
  /** request.timeout.ms of the channel. */
  readonly requestTimeoutMs: number
}

export class WireTxnMarkerChannel implements TxnMarkerChannel {
  readonly #o: WireTxnMarkerChannelOptions
  readonly #conns: BrokerConnections

  constructor(options: WireTxnMarkerChannelOptions) {
    this.#o = options
    this.#conns = new BrokerConnections({
      ...options,
      clientId: `broker-${options.nodeId}-txn-marker-sender`,
    })
  }

  async writeMarkers(marker: TxnMarker): Promise<ReadonlyMap<string, ErrorCode>> {
    const out = new Map<string, ErrorCode>()
    const image = this.#o.image()
    const byLeader = new Map<BrokerId, Map<TopicName, number[]>>()
    for (const p of marker.partitions) {
      const topic = image.topicsByName.get(p.topic as TopicName)
      const reg = topic?.partitions.get(p.partition)
      if (topic === undefined || reg === undefined) {
        out.set(txnPartitionKey(p), ErrorCode.UnknownTopicOrPartition)
        continue
      }
      if (reg.leader === NO_LEADER) {
        out.set(txnPartitionKey(p), ErrorCode.NotLeaderOrFollower)
        continue
      }
      const topics = byLeader.get(reg.leader) ?? new Map<TopicName, number[]>()
      topics.set(p.topic as TopicName, [...(topics.get(p.topic as TopicName) ?? []), p.partition])
      byLeader.set(reg.leader, topics)
    }
    await Promise.all(
      [...byLeader].map(async ([leader, topics]) => {
        const fail = (errorCode: ErrorCode) => {
          for (const [topic, ps] of topics)
            for (const partition of ps) out.set(txnPartitionKey({ topic, partition }), errorCode)
        }
        let c: KafkaConnection
        try {
          c = await this.#conns.get(leader)
        } catch {
          this.#conns.drop(leader)
          return fail(ErrorCode.NetworkException)
        }
        if (c.versionFor(apis.WriteTxnMarkers) === undefined) {
          // A leader that does not serve WriteTxnMarkers v1 yet (it may be upgrading): kept, retried.
          return fail(ErrorCode.UnsupportedVersion)
        }
        try {
          const res = await c.request(apis.WriteTxnMarkers, 1, {
            markers: [
              {
                producerId: ProducerId(marker.producerId),
                producerEpoch: marker.producerEpoch,
                transactionResult: marker.committed,
                coordinatorEpoch: marker.coordinatorEpoch,
                topics: [...topics].map(([name, partitionIndexes]) => ({ name, partitionIndexes })),
              },
            ],
          })
          fail(ErrorCode.NotLeaderOrFollower)
          for (const m of res.markers) {
            for (const t of m.topics) {
              for (const p of t.partitions)
                out.set(
                  txnPartitionKey({ topic: t.name, partition: p.partitionIndex }),
                  p.errorCode === ErrorCode.UnknownTopicOrPartition
                    ? ErrorCode.NotLeaderOrFollower
                    : (p.errorCode as ErrorCode),
                )
            }
          }
        } catch {
          this.#conns.drop(leader)
          fail(ErrorCode.NetworkException)
        }
      }),
    )
    return out
  }

  close(): void {
    this.#conns.close()
  }
}

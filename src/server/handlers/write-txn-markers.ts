/**
 * WriteTxnMarkers v1 (Kafka 4 removed v0, KIP-896), the transaction coordinator's request to a partition leader (Kafka's
 * `KafkaApis.handleWriteTxnMarkersRequest`): for each marker, a COMMIT or ABORT control batch
 * appended to each named partition this broker leads, with acks=all (answered once committed);
 * a partition not hosted here is UNKNOWN_TOPIC_OR_PARTITION, one followed here
 * NOT_LEADER_OR_FOLLOWER, a stale marker INVALID_PRODUCER_EPOCH or TRANSACTION_COORDINATOR_FENCED.
 * Once a marker is written, `markerWritten` runs (the group coordinator completes the
 * transaction's offsets) before its partition answers; its failure is that partition's error.
 * ALTER, else CLUSTER_ACTION, on the cluster: denied, every partition answers
 * CLUSTER_AUTHORIZATION_FAILED.
 */
import { TopicName } from '../../model/index.ts'
import { apis, ErrorCode, type WriteTxnMarkersResponseData } from '../../protocol/index.ts'
import type { MarkerInfo, ProduceResult, TxnMarkerEntry } from '../../replication/index.ts'
import { AclOperation, authorize } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'

export interface WriteTxnMarkersView {
  /** The replica manager's append of markers as leader, answered once the ISR has them. */
  appendTxnMarkers(entries: readonly TxnMarkerEntry[], timeoutMs: number): Promise<ProduceResult[]>
  /** A marker was written to `topic`-`partition`; a rejection becomes that partition's error. */
  markerWritten(topic: TopicName, partition: number, marker: MarkerInfo): Promise<void>
  /** How long a marker may wait for the ISR (`request.timeout.ms`, as Kafka's). */
  readonly timeoutMs: number
}

export function makeWriteTxnMarkersHandler(view: WriteTxnMarkersView): Handler {
  return defineHandler(apis.WriteTxnMarkers, { minVersion: 1 }, async (req, ctx) => {
    const authz = authorize(ctx)
    const allowed = authz.cluster(AclOperation.Alter) || authz.cluster(AclOperation.ClusterAction)
    const markers = req.markers.map(
      async (m): Promise<WriteTxnMarkersResponseData.WritableTxnMarkerResultIn> => {
        const marker: MarkerInfo = {
          producerId: m.producerId,
          producerEpoch: m.producerEpoch,
          coordinatorEpoch: m.coordinatorEpoch,
          committed: m.transactionResult,
        }
        const entries = m.topics.flatMap((t) =>
          t.partitionIndexes.map((partition) => ({ topic: TopicName(t.name), partition, marker })),
        )
        const results = allowed
          ? await view.appendTxnMarkers(entries, view.timeoutMs)
          : entries.map(() => ({ errorCode: ErrorCode.ClusterAuthorizationFailed }))
        const codes = await Promise.all(
          entries.map(async (e, i) => {
            const errorCode = results[i]!.errorCode
            if (errorCode !== ErrorCode.None) return errorCode
            try {
              await view.markerWritten(e.topic, e.partition, marker)
              return ErrorCode.None
            } catch {
              return ErrorCode.UnknownServerError
            }
          }),
        )
        let at = 0
        return {
          producerId: m.producerId,
          topics: m.topics.map((t) => ({
            name: t.name,
            partitions: t.partitionIndexes.map((partitionIndex) => ({
              partitionIndex,
              errorCode: codes[at++]!,
            })),
          })),
        }
      },
    )
    return { markers: await Promise.all(markers) }
  })
}

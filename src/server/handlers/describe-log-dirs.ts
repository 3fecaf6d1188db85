/**
 * DescribeLogDirs v1-4: each log directory of this broker with the partitions in it (size in bytes,
 * offset lag 0 for a current replica), all of them or those asked for, and from v4 the volume's
 * total and usable bytes. DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED (v3+; before,
 * no directory). Not implemented: future replicas (AlterReplicaLogDirs), quotas.
 */
import type { TopicName } from '../../model/index.ts'
import { apis, type DescribeLogDirsResponseData, ErrorCode } from '../../protocol/index.ts'
import type { LogDirDescription } from '../../replication/index.ts'
import { AclOperation, authorize } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'

export interface DescribeLogDirsView {
  describeLogDirs(): LogDirDescription[]
  /** The volume a directory is on: total and usable bytes, or null when unknown. */
  volumeBytes(dir: string): Promise<{ totalBytes: bigint; usableBytes: bigint } | null>
}

export function makeDescribeLogDirsHandler(view: DescribeLogDirsView): Handler {
  return defineHandler(apis.DescribeLogDirs, {}, async (req, ctx) => {
    const v = ctx.apiVersion
    if (!authorize(ctx).cluster(AclOperation.Describe)) {
      const errorCode = ErrorCode.ClusterAuthorizationFailed
      return { throttleTimeMs: 0, ...(v >= 3 ? { errorCode } : {}), results: [] }
    }
    const wanted =
      req.topics === null ? null : new Map(req.topics.map((t) => [t.topic as string, new Set(t.partitions)]))
    const results: DescribeLogDirsResponseData.DescribeLogDirsResultIn[] = []
    for (const d of view.describeLogDirs()) {
      const byTopic = new Map<TopicName, DescribeLogDirsResponseData.DescribeLogDirsPartitionIn[]>()
      for (const p of d.partitions) {
        if (wanted !== null && wanted.get(p.topic)?.has(p.partition) !== true) continue
        let list = byTopic.get(p.topic)
        if (list === undefined) {
          list = []
          byTopic.set(p.topic, list)
        }
        list.push({
          partitionIndex: p.partition,
          partitionSize: BigInt(p.sizeBytes),
          offsetLag: p.offsetLag,
          isFutureKey: false,
        })
      }
      const volume = v >= 4 ? await view.volumeBytes(d.dir) : null
      results.push({
        errorCode: d.offline ? ErrorCode.KafkaStorageError : ErrorCode.None,
        logDir: d.dir,
        topics: [...byTopic].map(([name, partitions]) => ({
          name,
          partitions: partitions.sort((a, b) => (a.partitionIndex ?? 0) - (b.partitionIndex ?? 0)),
        })),
        ...(volume !== null ? { totalBytes: volume.totalBytes, usableBytes: volume.usableBytes } : {}),
      })
    }
    return { throttleTimeMs: 0, ...(v >= 3 ? { errorCode: ErrorCode.None } : {}), results }
  })
}

/**
 * `weir cluster status`: the cluster id (DescribeCluster), the quorum (DescribeQuorum), the brokers and
 * partition health (one Metadata response, so that a broker fenced meanwhile is not listed beside the
 * partitions its fencing left offline).
 */
import { type ClusterClient, clusterStatus } from '../client/index.ts'
import { COMMON_USAGE, printJson, printTable, runSubcommands, withoutArguments } from './command-support.ts'

export const CLUSTER_USAGE = `Usage: weir cluster status [options]

The cluster id; the KRaft quorum's leader, epoch, high watermark and voters (with how far each
lags); the brokers; and partitions that are under-replicated (ISR smaller than the replicas) or
offline (no leader). Exits 1 when any partition is offline.

${COMMON_USAGE}`

export function runCluster(argv: readonly string[]): Promise<number> {
  return runSubcommands('cluster', CLUSTER_USAGE, {}, argv, {
    status: withoutArguments((c, values) => status(c, values.json === true)),
  })
}

async function status(client: ClusterClient, json: boolean): Promise<number> {
  const result = await clusterStatus(client)
  const { voters } = result.quorum
  const hw = result.quorum.highWatermark
  const { underReplicated, offline } = result
  if (json) printJson(result)
  else {
    process.stdout.write(
      `Cluster: ${result.clusterId}\n` +
        `Quorum:  leader ${result.quorum.leaderId}, epoch ${result.quorum.leaderEpoch}, high watermark ${hw}\n\n`,
    )
    printTable(
      ['VOTER', 'LOG-END-OFFSET', 'LAG', 'ROLE'],
      voters.map((v) => [
        v.nodeId,
        v.logEndOffset,
        v.lag,
        v.nodeId === result.quorum.leaderId ? 'leader' : 'follower',
      ]),
    )
    process.stdout.write('\n')
    printTable(
      ['BROKER', 'HOST', 'PORT', 'RACK'],
      result.brokers.map((b) => [b.nodeId, b.host, b.port, b.rack]),
    )
    process.stdout.write(
      `\n${result.topics} topics, ${result.partitions} partitions: ${underReplicated.length} under-replicated, ${offline.length} offline\n`,
    )
    if (underReplicated.length + offline.length > 0) {
      printTable(
        ['TOPIC', 'PARTITION', 'STATE', 'REPLICAS', 'ISR'],
        [
          ...offline.map((p) => [p.topic, p.partition, 'offline', p.replicas, p.isr]),
          ...underReplicated.map((p) => [p.topic, p.partition, 'under-replicated', p.replicas, p.isr]),
        ],
      )
    }
  }
  return offline.length > 0 ? 1 : 0
}

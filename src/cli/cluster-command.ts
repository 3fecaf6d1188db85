/**
 * `weir cluster status`: the cluster id (DescribeCluster), the quorum (DescribeQuorum), the brokers and
 * partition health (one Metadata response, so that a broker fenced meanwhile is not listed beside the
 * partitions its fencing left offline).
 */
import { type ClusterClient, KafkaError } from '../client/index.ts'
import { TopicName } from '../model/index.ts'
import { apis, ErrorCode } from '../protocol/index.ts'
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
  const { response: cluster } = await client.request(apis.DescribeCluster, {
    includeClusterAuthorizedOperations: false,
    endpointType: 1,
  })
  if (cluster.errorCode !== ErrorCode.None) throw new KafkaError(cluster.errorCode, cluster.errorMessage)
  const { response: q } = await client.request(apis.DescribeQuorum, {
    topics: [{ topicName: TopicName('__cluster_metadata'), partitions: [{ partitionIndex: 0 }] }],
  })
  if (q.errorCode !== ErrorCode.None) throw new KafkaError(q.errorCode, q.errorMessage)
  const qp = q.topics[0]?.partitions[0]
  if (qp !== undefined && qp.errorCode !== ErrorCode.None) throw new KafkaError(qp.errorCode, qp.errorMessage)
  const md = await client.refresh({ all: true })
  const partitions = [...md.topics.values()].flatMap((t) =>
    t.partitions.map((p) => ({ topic: t.name, ...p })),
  )
  const underReplicated = partitions.filter((p) => p.leader >= 0 && p.isr.length < p.replicas.length)
  const offline = partitions.filter((p) => p.leader < 0)
  const hw = qp?.highWatermark ?? -1n
  const voters = (qp?.currentVoters ?? []).map((v) => ({
    nodeId: v.replicaId,
    logEndOffset: v.logEndOffset,
    lag: v.logEndOffset >= 0n && hw >= 0n ? (hw > v.logEndOffset ? hw - v.logEndOffset : 0n) : null,
  }))
  const observers = (qp?.observers ?? []).map((v) => ({ nodeId: v.replicaId, logEndOffset: v.logEndOffset }))
  const result = {
    clusterId: cluster.clusterId,
    controllerId: cluster.controllerId,
    quorum: {
      leaderId: qp?.leaderId ?? -1,
      leaderEpoch: qp?.leaderEpoch ?? -1,
      highWatermark: hw,
      voters,
      observers,
    },
    brokers: [...md.brokers.values()]
      .map((b) => ({ nodeId: b.nodeId, host: b.host, port: b.port, rack: b.rack }))
      .sort((a, b) => a.nodeId - b.nodeId),
    topics: md.topics.size,
    partitions: partitions.length,
    underReplicated: underReplicated.map((p) => ({
      topic: p.topic,
      partition: p.partition,
      replicas: p.replicas,
      isr: p.isr,
    })),
    offline: offline.map((p) => ({ topic: p.topic, partition: p.partition, replicas: p.replicas })),
  }
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

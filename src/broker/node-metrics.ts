/**
 * A node's Prometheus metrics, through prom-client, named as the Prometheus JMX exporter's Kafka
 * rules name Kafka's MBeans (`kafka.controller:type=KafkaController,name=ActiveControllerCount`
 * becomes `kafka_controller_kafkacontroller_activecontrollercount`), so dashboards and alerts made
 * for Kafka read Weir's. One registry per node: several nodes may share a process
 * (`startCluster`). Gauges are computed when scraped, from the metadata image and the node's own
 * state; nothing on the data path waits for them. Every metric is listed in docs/metrics.md.
 */
import { Counter, Gauge, Registry, type RegistryContentType } from 'prom-client'
import type { MetadataImage } from '../metadata/index.ts'
import type { BrokerId } from '../model/index.ts'
import type { RaftStatus } from '../quorum/index.ts'
import type { DataPathTotals } from '../replication/index.ts'
import { PlainHistogram, registerPlain } from './plain-metrics.ts'
import { RequestMetrics } from './request-metrics.ts'
import { registerRuntimeMetrics } from './runtime-metrics.ts'

/** What the node tells its metrics when they are scraped. */
export interface NodeMetricsSource {
  readonly nodeId: BrokerId
  readonly image: () => MetadataImage
  /** Whether this node is the active controller; null on a broker-only node. */
  readonly activeController: () => boolean | null
  /** The quorum's state as this node sees it; null while the node starts. */
  readonly quorum: () => RaftStatus | null
  /** Whether the node serves clients (`/v1/health/ready`). */
  readonly ready: () => boolean
  /** The data path's cumulative counts; null on a controller-only node or while it starts. */
  readonly totals: () => DataPathTotals | null
  /** The size of every partition log this node holds. */
  readonly logSizes: () => Iterable<{
    readonly topic: string
    readonly partition: number
    readonly sizeBytes: number
  }>
  /** The committed offsets of the groups this node coordinates. */
  readonly groupOffsets: () => Iterable<{
    readonly groupId: string
    readonly topic: string
    readonly partition: number
    readonly offset: bigint
  }>
  /** The high watermark of a partition this node holds a replica of, else undefined. */
  readonly highWatermark: (topic: string, partition: number) => bigint | undefined
}

/**
 * Per-partition series are bounded so that a node with 100,000 partitions (or groups) does not
 * hand Prometheus 100,000 series of each: past the bound, the largest ones are kept, and the
 * totals (`weir_log_size_bytes`, `kafka_consumergroup_lag_sum`) still cover everything.
 */
export const PARTITION_SERIES_MAX = 1000

/** Latency buckets in milliseconds, from a local round trip to a slow fsync under load. */
const REQUEST_MS_BUCKETS = [0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000]

/** Kafka's metrics window: `metrics.sample.window.ms` (30 s) times `metrics.num.samples` (2). */
const COMMIT_WINDOW_MS = 60_000
const COMMIT_SAMPLES_MAX = 4096

/** Flush latency buckets in milliseconds, from a page-cache fsync to a stalled disk. */
const FLUSH_MS_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 5000]

export class NodeMetrics {
  readonly registry = new Registry<RegistryContentType>()
  readonly #requests = new RequestMetrics(REQUEST_MS_BUCKETS)
  /** Observed at every log flush (~1,100 per 1,000,000 records in small batches on one node): plain numbers. */
  readonly #flushMs = new PlainHistogram(FLUSH_MS_BUCKETS)
  /** Releases this node's use of the process's runtime monitor. */
  readonly close: () => void

  constructor(source: NodeMetricsSource) {
    const registry = this.registry
    this.close = registerRuntimeMetrics(registry)
    this.#requests.register(
      registry,
      {
        name: 'kafka_network_requestmetrics_requests_total',
        help: 'Requests answered, by API (kafka.network:type=RequestMetrics,name=RequestsPerSec)',
      },
      {
        name: 'kafka_network_requestmetrics_totaltimems',
        help: 'Time from a request read to its response ready, in ms, by API (kafka.network:type=RequestMetrics,name=TotalTimeMs)',
      },
    )
    const gauge = (name: string, help: string, value: () => number) =>
      new Gauge({
        name,
        help,
        registers: [registry],
        collect() {
          this.set(value())
        },
      })
    const partitions = () => partitionCounts(source.image(), source.nodeId)
    gauge(
      'kafka_controller_kafkacontroller_activecontrollercount',
      '1 on the active controller, else 0 (kafka.controller:type=KafkaController,name=ActiveControllerCount)',
      () => (source.activeController() === true ? 1 : 0),
    )
    gauge(
      'kafka_controller_kafkacontroller_offlinepartitionscount',
      'Partitions without a leader, reported by the active controller (kafka.controller:type=KafkaController,name=OfflinePartitionsCount)',
      () => (source.activeController() === true ? partitions().offline : 0),
    )
    gauge(
      'kafka_controller_kafkacontroller_globalpartitioncount',
      'Partitions in the cluster, reported by the active controller (kafka.controller:type=KafkaController,name=GlobalPartitionCount)',
      () => (source.activeController() === true ? partitions().total : 0),
    )
    gauge(
      'kafka_controller_kafkacontroller_globaltopiccount',
      'Topics in the cluster, reported by the active controller (kafka.controller:type=KafkaController,name=GlobalTopicCount)',
      () => (source.activeController() === true ? source.image().topicsByName.size : 0),
    )
    gauge(
      'kafka_server_replicamanager_partitioncount',
      'Partitions this broker holds a replica of (kafka.server:type=ReplicaManager,name=PartitionCount)',
      () => partitions().hosted,
    )
    gauge(
      'kafka_server_replicamanager_leadercount',
      'Partitions this broker leads (kafka.server:type=ReplicaManager,name=LeaderCount)',
      () => partitions().led,
    )
    gauge(
      'kafka_server_replicamanager_underreplicatedpartitions',
      'Partitions this broker leads whose ISR is smaller than their replicas (kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions)',
      () => partitions().underReplicated,
    )
    gauge(
      'kafka_server_raftmetrics_current_leader',
      'The metadata quorum leader this node knows, -1 when none (kafka.server:type=raft-metrics,name=current-leader)',
      () => source.quorum()?.leaderId ?? -1,
    )
    gauge(
      'kafka_server_raftmetrics_current_epoch',
      'The metadata quorum epoch this node is in (kafka.server:type=raft-metrics,name=current-epoch)',
      () => source.quorum()?.epoch ?? -1,
    )
    gauge(
      'kafka_server_raftmetrics_high_watermark',
      'The metadata log offset known committed (kafka.server:type=raft-metrics,name=high-watermark)',
      () => Number(source.quorum()?.highWatermark ?? -1n),
    )
    gauge(
      'kafka_server_raftmetrics_commit_latency_avg',
      `As quorum leader: mean ms from proposing metadata records to their commit, over the last ${COMMIT_WINDOW_MS / 1000} s (kafka.server:type=raft-metrics,name=commit-latency-avg)`,
      () => this.#commitLatency().avg,
    )
    gauge(
      'kafka_server_raftmetrics_commit_latency_max',
      `As quorum leader: the longest ms from proposing metadata records to their commit, over the last ${COMMIT_WINDOW_MS / 1000} s (kafka.server:type=raft-metrics,name=commit-latency-max)`,
      () => this.#commitLatency().max,
    )
    gauge('weir_node_ready', '1 once the node serves clients, else 0 (/v1/health/ready)', () =>
      source.ready() ? 1 : 0,
    )
    // The data path's counts, taken from its never-reset totals when scraped.
    const total = (name: string, help: string, value: (t: DataPathTotals) => number) => {
      let last = 0
      return new Counter({
        name,
        help,
        registers: [registry],
        collect() {
          const t = source.totals()
          if (t === null) return
          const v = value(t)
          if (v > last) this.inc(v - last)
          last = v
        },
      })
    }
    total(
      'kafka_server_brokertopicmetrics_messagesin_total',
      'Records appended as leader, all topics (kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec)',
      (t) => t.messagesIn,
    )
    total(
      'kafka_server_brokertopicmetrics_bytesin_total',
      'Record batch bytes appended as leader, all topics (kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec)',
      (t) => t.bytesIn,
    )
    total(
      'kafka_server_brokertopicmetrics_bytesout_total',
      'Record bytes answered to consumer fetches, all topics (kafka.server:type=BrokerTopicMetrics,name=BytesOutPerSec)',
      (t) => t.bytesOut,
    )
    total(
      'kafka_server_brokertopicmetrics_replicationbytesin_total',
      'Record bytes fetched from leaders as follower (kafka.server:type=BrokerTopicMetrics,name=ReplicationBytesInPerSec)',
      (t) => t.replicationBytesIn,
    )
    total(
      'kafka_server_brokertopicmetrics_replicationbytesout_total',
      'Record bytes answered to follower fetches (kafka.server:type=BrokerTopicMetrics,name=ReplicationBytesOutPerSec)',
      (t) => t.replicationBytesOut,
    )
    total(
      'kafka_server_replicamanager_isrshrinks_total',
      'ISR shrinks of partitions led here, accepted by the controller (kafka.server:type=ReplicaManager,name=IsrShrinksPerSec)',
      (t) => t.isrShrinks,
    )
    total(
      'kafka_server_replicamanager_isrexpands_total',
      'ISR expansions of partitions led here, accepted by the controller (kafka.server:type=ReplicaManager,name=IsrExpandsPerSec)',
      (t) => t.isrExpands,
    )
    const flushMs = this.#flushMs
    registerPlain(registry, {
      name: 'kafka_log_logflushstats_logflushrateandtimems',
      help: 'Time of each partition log flush (fsync), in ms (kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs)',
      type: 'histogram',
      values: () => flushMs.values('kafka_log_logflushstats_logflushrateandtimems', {}),
    })
    new Gauge({
      name: 'kafka_log_log_size',
      help: `Bytes of a partition's log on this node, the ${PARTITION_SERIES_MAX} largest (kafka.log:type=Log,name=Size)`,
      labelNames: ['topic', 'partition'],
      registers: [registry],
      collect() {
        this.reset()
        for (const l of largest([...source.logSizes()], (l) => l.sizeBytes))
          this.set({ topic: l.topic, partition: String(l.partition) }, l.sizeBytes)
      },
    })
    gauge('weir_log_size_bytes', 'Bytes of every partition log on this node', () => {
      let sum = 0
      for (const l of source.logSizes()) sum += l.sizeBytes
      return sum
    })
    new Gauge({
      name: 'kafka_consumergroup_lag',
      help: `High watermark minus the committed offset, per group and partition coordinated here, the ${PARTITION_SERIES_MAX} largest (kafka_exporter's name)`,
      labelNames: ['consumergroup', 'topic', 'partition'],
      registers: [registry],
      collect() {
        this.reset()
        for (const l of largest(groupLags(source), (l) => l.lag))
          this.set({ consumergroup: l.groupId, topic: l.topic, partition: String(l.partition) }, l.lag)
      },
    })
    new Gauge({
      name: 'kafka_consumergroup_lag_sum',
      help: "A group's lag summed over the partitions it committed offsets for (kafka_exporter's name)",
      labelNames: ['consumergroup'],
      registers: [registry],
      collect() {
        this.reset()
        const sums = new Map<string, number>()
        for (const l of groupLags(source)) sums.set(l.groupId, (sums.get(l.groupId) ?? 0) + l.lag)
        for (const [groupId, sum] of sums) this.set({ consumergroup: groupId }, sum)
      },
    })
  }

  #scrapes: Promise<unknown> = Promise.resolve()

  /**
   * The exposition, Prometheus text (0.0.4) or OpenMetrics. One registry serves both: prom-client
   * formats by the registry's content type and, for OpenMetrics, renames counters in place (without
   * `_total`), so scrapes run one at a time and each restores the names and the text type.
   */
  scrape(openMetrics: boolean): Promise<{ contentType: string; body: string }> {
    const run = async () => {
      const type = openMetrics ? Registry.OPENMETRICS_CONTENT_TYPE : Registry.PROMETHEUS_CONTENT_TYPE
      this.registry.setContentType(type)
      // A counter's `type` is the string 'counter' (the typings' MetricType enum is a declaration).
      const counters = this.registry.getMetricsAsArray().filter((m) => (m.type as unknown) === 'counter')
      const names = counters.map((m) => m.name)
      try {
        return { contentType: type, body: await this.registry.metrics() }
      } finally {
        for (const [i, m] of counters.entries()) m.name = names[i]!
        this.registry.setContentType(Registry.PROMETHEUS_CONTENT_TYPE)
      }
    }
    const scraped = this.#scrapes.then(run, run)
    this.#scrapes = scraped.catch(() => {})
    return scraped
  }

  /** Commits timed in the window: when (monotonic ms) and how long. */
  readonly #commits: Array<{ readonly atMs: number; readonly ms: number }> = []

  /** A metadata proposal of this quorum leader committed `ms` after it was proposed. */
  observeCommit(ms: number): void {
    if (this.#commits.length >= COMMIT_SAMPLES_MAX) this.#commits.shift()
    this.#commits.push({ atMs: performance.now(), ms })
  }

  /** Mean and max commit latency over the window; NaN when nothing committed in it (Kafka's too). */
  #commitLatency(): { avg: number; max: number } {
    const since = performance.now() - COMMIT_WINDOW_MS
    while (this.#commits.length > 0 && this.#commits[0]!.atMs < since) this.#commits.shift()
    if (this.#commits.length === 0) return { avg: Number.NaN, max: Number.NaN }
    let sum = 0
    let max = 0
    for (const c of this.#commits) {
      sum += c.ms
      if (c.ms > max) max = c.ms
    }
    return { avg: sum / this.#commits.length, max }
  }

  /** A partition log's flush took `ms`. */
  observeFlush(ms: number): void {
    this.#flushMs.observe(ms)
  }

  /** A request answered (or dropped) after `ms`, by API name (`Produce`, `Fetch`, ...). */
  observeRequest(api: string, ms: number): void {
    this.#requests.observe(api, ms)
  }
}

interface PartitionCounts {
  total: number
  offline: number
  hosted: number
  led: number
  underReplicated: number
}

/** One pass over the image's partitions. */
function partitionCounts(image: MetadataImage, nodeId: BrokerId): PartitionCounts {
  const c: PartitionCounts = { total: 0, offline: 0, hosted: 0, led: 0, underReplicated: 0 }
  for (const topic of image.topicsByName.values()) {
    for (const p of topic.partitions.values()) {
      c.total++
      if (p.leader < 0) c.offline++
      if (p.replicas.includes(nodeId)) c.hosted++
      if (p.leader === nodeId) {
        c.led++
        if (p.isr.length < p.replicas.length) c.underReplicated++
      }
    }
  }
  return c
}

/** At most PARTITION_SERIES_MAX of `items`, the largest by `size` when there are more. */
function largest<T>(items: T[], size: (t: T) => number): T[] {
  if (items.length <= PARTITION_SERIES_MAX) return items
  return items.sort((a, b) => size(b) - size(a)).slice(0, PARTITION_SERIES_MAX)
}

interface GroupLag {
  readonly groupId: string
  readonly topic: string
  readonly partition: number
  readonly lag: number
}

/** The lag of every committed offset of a partition this node holds a replica of. */
function groupLags(source: NodeMetricsSource): GroupLag[] {
  const out: GroupLag[] = []
  for (const o of source.groupOffsets()) {
    const hw = source.highWatermark(o.topic, o.partition)
    if (hw === undefined) continue
    out.push({
      groupId: o.groupId,
      topic: o.topic,
      partition: o.partition,
      lag: hw > o.offset ? Number(hw - o.offset) : 0,
    })
  }
  return out
}

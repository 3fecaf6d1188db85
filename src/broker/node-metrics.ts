/**
 * A node's Prometheus metrics, through prom-client, named as the Prometheus JMX exporter's Kafka
 * rules name Kafka's MBeans (`kafka.controller:type=KafkaController,name=ActiveControllerCount`
 * becomes `kafka_controller_kafkacontroller_activecontrollercount`), so dashboards and alerts made
 * for Kafka read Weir's. One registry per node: several nodes may share a process
 * (`startCluster`). Gauges are computed when scraped, from the metadata image and the node's own
 * state; nothing on the data path waits for them. Every metric is listed in docs/metrics.md.
 */
import {
  Counter,
  collectDefaultMetrics,
  Gauge,
  Histogram,
  Registry,
  type RegistryContentType,
} from 'prom-client'
import type { MetadataImage } from '../metadata/index.ts'
import type { BrokerId } from '../model/index.ts'
import type { RaftStatus } from '../quorum/index.ts'

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
}

/** Latency buckets in milliseconds, from a local round trip to a slow fsync under load. */
const REQUEST_MS_BUCKETS = [0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000]

export class NodeMetrics {
  readonly registry = new Registry<RegistryContentType>()
  readonly #requests: Counter<'request'>
  readonly #requestMs: Histogram<'request'>

  constructor(source: NodeMetricsSource) {
    const registry = this.registry
    collectDefaultMetrics({ register: registry })
    this.#requests = new Counter({
      name: 'kafka_network_requestmetrics_requests_total',
      help: 'Requests answered, by API (kafka.network:type=RequestMetrics,name=RequestsPerSec)',
      labelNames: ['request'],
      registers: [registry],
    })
    this.#requestMs = new Histogram({
      name: 'kafka_network_requestmetrics_totaltimems',
      help: 'Time from a request read to its response ready, in ms, by API (kafka.network:type=RequestMetrics,name=TotalTimeMs)',
      labelNames: ['request'],
      buckets: REQUEST_MS_BUCKETS,
      registers: [registry],
    })
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
    gauge('weir_node_ready', '1 once the node serves clients, else 0 (/v1/health/ready)', () =>
      source.ready() ? 1 : 0,
    )
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
      const counters = this.registry.getMetricsAsArray().filter((m) => (m as unknown) instanceof Counter)
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

  /** A request answered (or dropped) after `ms`, by API name (`Produce`, `Fetch`, ...). */
  observeRequest(api: string, ms: number): void {
    this.#requests.inc({ request: api })
    this.#requestMs.observe({ request: api }, ms)
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

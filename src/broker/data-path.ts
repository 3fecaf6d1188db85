/**
 * The broker's data path, wired: the replica manager (hosted partitions, reconciled to metadata),
 * producer-id blocks from the controller, the fetch-session cache, and the handlers that serve
 * them (Produce, Fetch, ListOffsets, OffsetForLeaderEpoch, DeleteRecords, InitProducerId,
 * DescribeLogDirs, DescribeProducers, WriteTxnMarkers), each given a small view. No logic of its own.
 */
import { statfs } from 'node:fs/promises'
import type { ClientSecurity } from '../client/index.ts'
import { type EffectiveConfig, resolveTopicConfig } from '../config/index.ts'
import { type NodeConfigSource, topicConfigLayers } from '../controller/index.ts'
import type { Clock, Disk, Random, TimerHandle, Transport } from '../io/index.ts'
import type { ImagePublication, MetadataImage } from '../metadata/index.ts'
import type { BrokerId, TopicName } from '../model/index.ts'
import {
  type AllocateProducerIdsResponseData,
  type AlterPartitionRequestData,
  type AlterPartitionResponseData,
  ErrorCode,
  errorCodeOf,
} from '../protocol/index.ts'
import { ProducerIdManager, ReplicaManager, replicaSelectorOf, WireLeaderLink } from '../replication/index.ts'
import {
  FetchSessionCache,
  type Handler,
  type InitProducerIdView,
  makeDeleteRecordsHandler,
  makeDescribeLogDirsHandler,
  makeDescribeProducersHandler,
  makeFetchHandler,
  makeInitProducerIdHandler,
  makeListOffsetsHandler,
  makeOffsetForLeaderEpochHandler,
  makeProduceHandler,
  makeWriteTxnMarkersHandler,
} from '../server/index.ts'
import {
  type LogManager,
  type LogManagerOptions,
  logManagerConfigFrom,
  ReadBufferPool,
} from '../storage/index.ts'
import { appendVerified, TxnVerifier } from './txn-verifier.ts'

/** KIP-227's `min.incremental.fetch.session.eviction.ms` (not a Kafka config: its fixed value). */
const FETCH_SESSION_EVICTION_MS = 120_000

export interface DataPathOptions {
  readonly nodeId: BrokerId
  readonly disk: Disk
  readonly clock: Clock
  readonly random: Random
  /** The node's resolved broker config. */
  readonly effective: EffectiveConfig
  /** This node's id and static config, for topic configs resolved against the image. */
  readonly configSource: () => NodeConfigSource
  /** AllocateProducerIds through the controller channel. */
  readonly allocateProducerIds: () => Promise<AllocateProducerIdsResponseData.AllocateProducerIdsResponseIn>
  /** AlterPartition through the controller channel. */
  readonly alterPartition: (
    req: AlterPartitionRequestData.AlterPartitionRequest,
  ) => Promise<AlterPartitionResponseData.AlterPartitionResponseIn>
  /** This broker's epoch, -1 before it registered. */
  readonly brokerEpoch: () => bigint
  /** The latest metadata image (leaders' endpoints). */
  readonly image: () => MetadataImage
  readonly transport: Transport
  /** The listener replica fetchers connect to on leaders (`NodeConfig.interBrokerListenerName`). */
  readonly interBrokerListenerName: string | null
  /** How that listener is secured (`interBrokerSecurity`); default PLAINTEXT. */
  readonly interBrokerSecurity?: ClientSecurity
  readonly log: (level: 'info' | 'warn' | 'error', message: string) => void
  /**
   * The node's buffer pool, shared with its listeners (produce frames) and log directories
   * (`logManagerOptions`); default: one of the data path's own.
   */
  readonly pool?: ReadBufferPool
  /**
   * A transaction marker was written (committed) to a `__consumer_offsets` partition: the group
   * coordinator completes the transaction's offsets, awaited before WriteTxnMarkers answers it.
   */
  readonly onTransactionCompleted?: (
    topic: TopicName,
    partition: number,
    producerId: bigint,
    producerEpoch: number,
    committed: boolean,
  ) => void | Promise<void>
}

const GROUP_METADATA_TOPIC = '__consumer_offsets'

/** A pooled read buffer unused for 5-10 s is dropped: a consumer reading old data reuses its own. */
const READ_BUFFER_TRIM_MS = 5000

export class DataPath {
  readonly replicas: ReplicaManager
  readonly producerIds: ProducerIdManager
  readonly sessions: FetchSessionCache
  /**
   * The node's buffers: fetch reads of old data (the write tail answers recent data), and produce
   * frames its connections assemble, which logs and write tails retain (`read-buffer-pool.ts`).
   */
  readonly readBuffers: ReadBufferPool
  /** KIP-890's verifications with the transaction coordinators; null without `transaction.partition.verification.enable`. */
  readonly txnVerifier: TxnVerifier | null
  readonly #o: DataPathOptions
  #trimTimer: TimerHandle | null = null

  constructor(options: DataPathOptions) {
    this.#o = options
    this.readBuffers = options.pool ?? new ReadBufferPool()
    this.#armTrim()
    const e = options.effective
    this.replicas = new ReplicaManager({
      nodeId: options.nodeId,
      disk: options.disk,
      clock: options.clock,
      topicConfig: (topic, image) =>
        resolveTopicConfig(topicConfigLayers(image, topic, options.configSource())),
      producerIdExpirationMs: e.int('producer.id.expiration.ms'),
      replicaSelector: replicaSelectorOf(e.string('replica.selector.class')),
      replication: {
        connect: (leader) =>
          new WireLeaderLink({
            leader,
            nodeId: options.nodeId,
            image: options.image,
            listenerName: options.interBrokerListenerName,
            clock: options.clock,
            transport: options.transport,
            ...(options.interBrokerSecurity === undefined ? {} : { security: options.interBrokerSecurity }),
            requestTimeoutMs: e.int('replica.socket.timeout.ms'),
            responseBytesMax:
              e.int('replica.fetch.response.max.bytes') + e.int('replica.fetch.max.bytes') + 1024 * 1024,
            frameBuffers: this.readBuffers,
          }),
        brokerEpoch: options.brokerEpoch,
        alterPartition: options.alterPartition,
        fetcher: {
          fetchBytesMax: e.int('replica.fetch.max.bytes'),
          responseBytesMax: e.int('replica.fetch.response.max.bytes'),
          fetchBytesMin: e.int('replica.fetch.min.bytes'),
          fetchWaitMsMax: e.int('replica.fetch.wait.max.ms'),
          backoffMs: e.int('replica.fetch.backoff.ms'),
          numFetchers: e.int('num.replica.fetchers'),
        },
        lagTimeMsMax: e.long('replica.lag.time.max.ms'),
        highWatermarkCheckpointIntervalMs: e.long('replica.high.watermark.checkpoint.interval.ms'),
        alterPartitionRetryBackoffMs: 100,
      },
      log: options.log,
    })
    this.txnVerifier = e.boolean('transaction.partition.verification.enable')
      ? new TxnVerifier({
          nodeId: options.nodeId,
          image: options.image,
          listenerName: options.interBrokerListenerName,
          ...(options.interBrokerSecurity === undefined ? {} : { security: options.interBrokerSecurity }),
          clock: options.clock,
          transport: options.transport,
          requestTimeoutMs: e.int('request.timeout.ms'),
        })
      : null
    this.producerIds = new ProducerIdManager(async () => {
      const r = await options.allocateProducerIds()
      const errorCode = errorCodeOf(r.errorCode ?? ErrorCode.None)
      if (errorCode !== ErrorCode.None) return { errorCode }
      return { start: r.producerIdStart ?? -1n, length: r.producerIdLen ?? 0 }
    })
    this.sessions = new FetchSessionCache(
      {
        slotsMax: e.int('max.incremental.fetch.session.cache.slots'),
        evictionMs: FETCH_SESSION_EVICTION_MS,
      },
      options.random,
    )
  }

  /** What each log directory needs from the data path: the logs' hooks and the cleaner's bound. */
  logManagerOptions(): Pick<LogManagerOptions, 'hooksFor' | 'cleanerUpperBound' | 'config' | 'pool'> {
    return {
      pool: this.readBuffers,
      hooksFor: (topic, partition) => this.replicas.hooksFor(topic, partition),
      cleanerUpperBound: (topic, partition) => this.replicas.lastStableOffset(topic, partition),
      config: logManagerConfigFrom(this.#o.effective),
    }
  }

  onPublish(p: ImagePublication): void {
    this.replicas.onPublish(p)
  }

  /** Starts the log directories' schedules (flushes, retention, checkpoints, the cleaner). */
  startLogs(managers: readonly LogManager[]): void {
    for (const m of managers) m.start()
  }

  /**
   * Starts serving the partitions of `managers` (opened with `logManagerOptions`): the broker calls
   * it once its metadata has caught up past its own registration.
   */
  startReplicas(managers: readonly LogManager[]): void {
    this.replicas.start(managers)
  }

  /** The client-facing handlers of the data path. */
  handlers(o: {
    image: () => MetadataImage
    /** The transaction coordinator's InitProducerId for transactional ids. */
    initTransactional?: InitProducerIdView['initTransactional']
  }): Handler[] {
    const replicas = this.replicas
    const e = this.#o.effective
    return [
      makeProduceHandler({
        image: o.image,
        appendRecords: (entries, options) =>
          this.txnVerifier === null
            ? replicas.appendRecords(entries, options)
            : appendVerified(
                {
                  verifier: this.txnVerifier,
                  clock: this.#o.clock,
                  startTxnVerification: (t, p, id, epoch) => replicas.startTxnVerification(t, p, id, epoch),
                  appendRecords: (es, o) => replicas.appendRecords(es, o),
                },
                entries,
                options,
              ),
      }),
      makeFetchHandler({
        image: o.image,
        sessions: this.sessions,
        nowMs: () => this.#o.clock.monotonicMs(),
        fetchBytesMax: e.int('fetch.max.bytes'),
        readBuffers: this.readBuffers,
        fetchMessages: (specs, params) => replicas.fetchMessages(specs, params),
      }),
      makeListOffsetsHandler(replicas),
      makeOffsetForLeaderEpochHandler(replicas),
      makeDeleteRecordsHandler(replicas),
      makeInitProducerIdHandler({
        generateProducerId: () => this.producerIds.generate(),
        ...(o.initTransactional === undefined ? {} : { initTransactional: o.initTransactional }),
      }),
      makeDescribeLogDirsHandler({ describeLogDirs: () => replicas.describeLogDirs(), volumeBytes }),
      makeDescribeProducersHandler(replicas),
      makeWriteTxnMarkersHandler({
        appendTxnMarkers: (entries, timeoutMs) => replicas.appendTxnMarkers(entries, timeoutMs),
        markerWritten: async (topic, partition, m) => {
          const completed = this.#o.onTransactionCompleted
          if (completed === undefined || topic !== GROUP_METADATA_TOPIC) return
          await completed(topic, partition, m.producerId, m.producerEpoch, m.committed)
        },
        timeoutMs: e.int('request.timeout.ms'),
      }),
    ]
  }

  /** Shutdown begins: long polls answer now (waiting produces may finish until `close`). */
  completeDelayed(): void {
    this.replicas.completeDelayed()
  }

  /** Every READ_BUFFER_TRIM_MS, the read buffers no fetch used since the last time go back. */
  #armTrim(): void {
    this.#trimTimer = this.#o.clock.setTimer(READ_BUFFER_TRIM_MS, () => {
      this.readBuffers.trimIdle()
      this.#armTrim()
    })
  }

  /** Before the log directories close: producer snapshots at every log end. */
  close(): Promise<void> {
    if (this.#trimTimer !== null) this.#o.clock.clearTimer(this.#trimTimer)
    this.#trimTimer = null
    this.txnVerifier?.close()
    return this.replicas.close()
  }
}

/** The volume under `dir`: its size and the bytes this process may still use. */
async function volumeBytes(dir: string): Promise<{ totalBytes: bigint; usableBytes: bigint } | null> {
  try {
    const s = await statfs(dir, { bigint: true })
    return { totalBytes: s.blocks * s.bsize, usableBytes: s.bavail * s.bsize }
  } catch {
    return null
  }
}

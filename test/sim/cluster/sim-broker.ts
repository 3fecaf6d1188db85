/**
 * A simulated broker: the real ReplicaManager (with its ReplicaFetcherManager and
 * AlterPartitionManager) over a real LogManager on its own SimDisk, its own MetadataLoader fed from
 * the controller's log, and registration and heartbeats as src/broker/node.ts does them. The
 * network ports are in memory: LeaderLink calls the leader broker's ReplicaManager through the
 * simulated network; AlterPartition, registration and heartbeats reach the SimController's real
 * QuorumController the same way. A crash kills the process (page cache kept) or the machine
 * (SimDisk's power-loss semantics); a restart recovers from the disk and registers again.
 */
import { GroupCoordination, internalTopicRequest } from '../../../src/broker/group-coordination.ts'
import { resolveBrokerConfig, resolveTopicConfig } from '../../../src/config/index.ts'
import { type NodeConfigSource, randomUuid, topicConfigLayers } from '../../../src/controller/index.ts'
import {
  type Disk,
  DiskError,
  type DiskFile,
  type DiskStat,
  type OpenOptions,
  type Random,
  SimDisk,
  type TimerHandle,
} from '../../../src/io/index.ts'
import { type CommittedEntry, MetadataLoader } from '../../../src/metadata/index.ts'
import type { BrokerId, TopicName, Uuid } from '../../../src/model/index.ts'
import { type BatchHeader, ErrorCode, readBatchHeader } from '../../../src/protocol/index.ts'
import {
  type LeaderLink,
  type ReplicaFetchAnswer,
  type ReplicaFetchRequest,
  type ReplicaFetchResponse,
  ReplicaManager,
} from '../../../src/replication/index.ts'
import { type LogHooks, LogManager, type PartitionLog, topicLogConfig } from '../../../src/storage/index.ts'
import { CONTROLLER_ID, type SimController } from './sim-controller.ts'
import { NodeClock, type SimEndpoint, type SimWorld } from './sim-world.ts'

/** The simulated brokers' one log dir's id (a constant: drawing one would change every seed's run). */
const SIM_DIRECTORY_ID = 'c2ltLWxvZy1kaXItMDAwMA'

export interface BrokerTimings {
  readonly heartbeatIntervalMs: number
  readonly requestTimeoutMs: number
  readonly fetchWaitMsMax: number
  readonly fetchBackoffMs: number
  readonly lagTimeMsMax: number
  readonly hwCheckpointIntervalMs: number
  readonly metadataPullMs: number
}

/** One batch as a replica holds it (from the log's hooks): what NoDivergence compares. */
export interface MirrorBatch {
  readonly baseOffset: bigint
  readonly lastOffset: bigint
  readonly epoch: number
  readonly crc: number
  readonly producerId: bigint
  readonly baseSequence: number
}

/** A replica's batches in offset order, kept in step with its log through the log's hooks. */
export class Mirror {
  batches: MirrorBatch[] = []
  /** Offsets below this were compared with the committed log already (reset by truncation). */
  verifiedTo = 0n
  /** False until the log was read back after opening (recovery reports only its tail). */
  complete = false

  add(h: BatchHeader): void {
    const b: MirrorBatch = {
      baseOffset: h.baseOffset,
      lastOffset: h.baseOffset + BigInt(h.lastOffsetDelta),
      epoch: h.partitionLeaderEpoch,
      crc: h.crc,
      producerId: h.producerId,
      baseSequence: h.baseSequence,
    }
    const last = this.batches.at(-1)
    if (last !== undefined && last.lastOffset >= b.baseOffset) this.truncateTo(b.baseOffset)
    this.batches.push(b)
  }

  truncateTo(end: bigint): void {
    let n = this.batches.length
    while (n > 0 && this.batches[n - 1]!.baseOffset >= end) n--
    this.batches.length = n
    if (this.verifiedTo > end) this.verifiedTo = end
  }

  truncateFully(start: bigint): void {
    this.batches = []
    this.verifiedTo = start
  }

  startAt(start: bigint): void {
    let i = 0
    while (i < this.batches.length && this.batches[i]!.lastOffset < start) i++
    if (i > 0) this.batches = this.batches.slice(i)
    if (this.verifiedTo < start) this.verifiedTo = start
  }

  /** Index of the first batch whose last offset is at or past `offset`. */
  indexAt(offset: bigint): number {
    let lo = 0
    let hi = this.batches.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (this.batches[mid]!.lastOffset < offset) lo = mid + 1
      else hi = mid
    }
    return lo
  }
}

/** A Disk that refuses everything once the incarnation that made it is dead. */
class IncarnationDisk implements Disk {
  readonly #inner: Disk
  readonly #alive: () => boolean

  constructor(inner: Disk, alive: () => boolean) {
    this.#inner = inner
    this.#alive = alive
  }

  #check(path: string): void {
    if (!this.#alive()) throw new DiskError('EIO', path, `EIO: the process is dead (${path})`)
  }

  async open(path: string, options?: OpenOptions): Promise<DiskFile> {
    this.#check(path)
    const f = await this.#inner.open(path, options)
    if (!this.#alive()) {
      await f.close().catch(() => {})
      this.#check(path)
    }
    return f
  }
  async readFile(path: string): Promise<Buffer> {
    this.#check(path)
    return this.#inner.readFile(path)
  }
  async rename(from: string, to: string): Promise<void> {
    this.#check(from)
    return this.#inner.rename(from, to)
  }
  async remove(path: string): Promise<void> {
    this.#check(path)
    return this.#inner.remove(path)
  }
  async removeTree(path: string): Promise<void> {
    this.#check(path)
    return this.#inner.removeTree(path)
  }
  async list(dir: string): Promise<string[]> {
    this.#check(dir)
    return this.#inner.list(dir)
  }
  async mkdir(path: string): Promise<void> {
    this.#check(path)
    return this.#inner.mkdir(path)
  }
  async syncDir(path: string): Promise<void> {
    this.#check(path)
    return this.#inner.syncDir(path)
  }
  async exists(path: string): Promise<boolean> {
    this.#check(path)
    return this.#inner.exists(path)
  }
  async stat(path: string): Promise<DiskStat> {
    this.#check(path)
    return this.#inner.stat(path)
  }
}

export interface BrokerPeers {
  readonly controller: SimController
  broker(id: number): SimBroker
}

const LOG_DIR = '/data'

export class SimBroker implements SimEndpoint {
  readonly id: number
  up = false
  incarnation = 0
  readonly disk = new SimDisk()
  readonly clock: NodeClock
  rm: ReplicaManager | null = null
  /** The real group coordinator, persisting offsets to `__consumer_offsets` through `rm`. */
  groups: GroupCoordination | null = null
  logManager: LogManager | null = null
  loader = new MetadataLoader()
  /** Metadata entries applied (the next offset to apply). */
  applied = 0
  brokerEpoch = -1n
  /** This process's registration identity, as node.ts: one per start, kept across re-registrations. */
  incarnationId: Uuid | null = null
  fenced = true
  /** Started: logs open and the replica manager serving. */
  serving = false
  /** Per "topic-partition": this replica's batches. */
  mirrors = new Map<string, Mirror>()
  /** The incarnation whose disk is full (writes fail with ENOSPC), or null. */
  diskFullIncarnation: number | null = null
  /** The log dir went offline: logs re-opened meanwhile are read back before their mirrors count. */
  #reopening = false
  /** The pending heartbeat's timer (null while one is in flight or before registration). */
  #heartbeatTimer: TimerHandle | null = null
  crashes = 0
  readonly #world: SimWorld
  readonly #random: Random
  readonly #timings: BrokerTimings
  readonly #peers: BrokerPeers
  readonly #slowDisk: { rate: number; msMax: number }
  readonly #configSource: NodeConfigSource
  /** Starts the replica manager once metadata has caught up past the registration (per incarnation). */
  #onRegistered: () => void = () => {}

  constructor(
    id: number,
    world: SimWorld,
    random: Random,
    timings: BrokerTimings,
    peers: BrokerPeers,
    clock: { rate: number; wallOffsetMs: number },
    slowDisk: { rate: number; msMax: number },
    staticConfig: ReadonlyMap<string, string> = new Map(),
  ) {
    this.id = id
    this.#world = world
    this.#random = random
    this.#timings = timings
    this.#peers = peers
    this.#slowDisk = slowDisk
    this.#configSource = { nodeId: id, staticBroker: new Map([...staticConfig, ['node.id', String(id)]]) }
    this.clock = new NodeClock(world, this, clock.rate, clock.wallOffsetMs)
    // A slow disk holds some appends, writes and fsyncs for a while (so crashes land mid-fsync);
    // an operation of an incarnation that died meanwhile then fails and changes nothing.
    this.disk.setHook((op) => {
      // A full disk refuses the writes of the incarnation it filled up under (a restart finds space).
      if (this.diskFullIncarnation === this.incarnation && this.up && (op === 'append' || op === 'write'))
        return 'ENOSPC'
      if (op !== 'sync' && op !== 'append' && op !== 'write' && op !== 'syncDir') return undefined
      if (this.#slowDisk.rate === 0 || this.#random.nextFloat() >= this.#slowDisk.rate) return undefined
      const incarnation = this.incarnation
      const ms = this.#random.nextFloat() * this.#slowDisk.msMax
      return this.#world
        .sleep(ms)
        .then(() => (this.up && this.incarnation === incarnation ? undefined : 'EIO'))
    })
  }

  log(line: string): void {
    this.#world.log(`b${this.id} ${line}`)
  }

  #alive(incarnation: number): () => boolean {
    return () => this.up && this.incarnation === incarnation
  }

  /** Start (or restart after a crash): recover the logs from the disk, then register. */
  start(): void {
    if (this.up) return
    this.up = true
    const incarnation = this.incarnation
    const alive = this.#alive(incarnation)
    const disk = new IncarnationDisk(this.disk, alive)
    const clock = this.clock
    const t = this.#timings
    this.loader = new MetadataLoader()
    this.applied = 0
    this.brokerEpoch = -1n
    this.incarnationId = null
    this.fenced = true
    this.serving = false
    this.mirrors = new Map()
    this.#reopening = false
    this.#heartbeatTimer = null
    const rm = new ReplicaManager({
      nodeId: this.id as BrokerId,
      disk,
      clock,
      topicConfig: (topic, image) => resolveTopicConfig(topicConfigLayers(image, topic, this.#configSource)),
      producerIdExpirationMs: 86_400_000,
      replication: {
        connect: (leader) => this.#leaderLink(leader, incarnation),
        brokerEpoch: () => this.brokerEpoch,
        alterPartition: (req) =>
          this.#world.rpc(this.id, CONTROLLER_ID, clock, t.requestTimeoutMs, () =>
            this.#peers.controller.qc.alterPartition(req),
          ),
        fetcher: {
          fetchBytesMax: 1_048_576,
          responseBytesMax: 10_485_760,
          fetchBytesMin: 1,
          fetchWaitMsMax: t.fetchWaitMsMax,
          backoffMs: t.fetchBackoffMs,
          numFetchers: 1,
        },
        lagTimeMsMax: t.lagTimeMsMax,
        highWatermarkCheckpointIntervalMs: t.hwCheckpointIntervalMs,
        alterPartitionRetryBackoffMs: 100,
      },
      log: (level, message) => {
        if (level !== 'info') this.log(`${level}: ${message}`)
      },
    })
    this.rm = rm
    const groups = new GroupCoordination({
      effective: resolveBrokerConfig({ staticBroker: this.#configSource.staticBroker }),
      clock,
      random: this.#random,
      replicas: rm,
      image: () => this.loader.image,
      createInternalTopic: (spec) =>
        this.#world.rpc(this.id, CONTROLLER_ID, clock, t.requestTimeoutMs, () =>
          this.#peers.controller.qc.createTopics(internalTopicRequest(spec), undefined, {
            allowInternal: true,
          }),
        ),
      log: (level, message) => {
        if (level !== 'info') this.log(`${level}: ${message}`)
      },
    })
    this.groups = groups
    const loader = this.loader
    loader.subscribe((p) => rm.onPublish(p))
    loader.subscribe(() => groups.onPublish())
    // As node.ts: the replica manager acts on partitions only once this incarnation's metadata has
    // caught up past its own registration (Kafka installs its metadata publishers after the initial
    // catch-up), so it never leads or follows from a picture older than the leaderships its
    // registration moved.
    let replicasStarted = false
    const startReplicasWhenCaughtUp = () => {
      const lm = this.logManager
      if (replicasStarted || !alive() || lm === null || this.brokerEpoch < 0n) return
      if (this.loader.image.provenance.offset < this.brokerEpoch) return
      replicasStarted = true
      rm.start([lm])
    }
    loader.subscribe(startReplicasWhenCaughtUp)
    this.#onRegistered = startReplicasWhenCaughtUp
    const hooksFor = (topic: string, partition: number): LogHooks => {
      const inner = rm.hooksFor(topic, partition)
      const mirror = new Mirror()
      // A log opened once the broker serves is a new one: its hooks see every batch; one re-opened
      // after its dir came back is read back first (recovery reports only its tail).
      mirror.complete = this.serving && !this.#reopening
      this.mirrors.set(`${topic}-${partition}`, mirror)
      return {
        onBatch: (h, source, marker) => {
          inner.onBatch?.(h, source, marker)
          mirror.add(h)
        },
        onTruncateTo: (end) => {
          inner.onTruncateTo?.(end)
          mirror.truncateTo(end)
        },
        onTruncateFully: (start) => {
          inner.onTruncateFully?.(start)
          mirror.truncateFully(start)
        },
        onLogStartOffset: (start) => {
          inner.onLogStartOffset?.(start)
          mirror.startAt(start)
        },
        ...(inner.onRoll === undefined ? {} : { onRoll: (base: bigint) => inner.onRoll!(base) }),
      }
    }
    const open = async () => {
      const lm = await LogManager.open(LOG_DIR, {
        disk,
        clock,
        clusterId: 'sim-cluster',
        nodeId: this.id,
        topicConfig: (topic) =>
          topicLogConfig(topicConfigLayers(this.loader.image, topic, this.#configSource)),
        hooksFor,
        onWarning: (m) => this.log(`storage: ${m}`),
        cleanerUpperBound: (topic, partition) => rm.lastStableOffset(topic, partition),
      })
      if (!alive()) return
      // Recovery reports only the batches past the recovery point: read every log back once.
      for (const { topic, partition, log } of lm.logs()) {
        const mirror = this.mirrors.get(`${topic}-${partition}`)!
        mirror.batches = []
        await readAll(log, mirror)
        if (!alive()) return
        mirror.complete = true
      }
      this.logManager = lm
      lm.subscribe({
        onOffline: () => {
          if (!alive()) return // a dead incarnation's disk operations fail: not a full disk
          this.#reopening = true
          this.log('log dir offline')
          this.#heartbeatSoon(incarnation)
        },
        onOnline: (m) => {
          if (!alive()) return
          this.log('log dir online again')
          void this.#readBack(m, alive)
        },
      })
      lm.start()
      this.serving = true
      this.log(`STARTED (incarnation ${incarnation})`)
      this.#pullMetadata(incarnation)
      void this.#register(incarnation)
    }
    open().catch((e: unknown) => {
      if (alive()) this.#world.fail(e)
    })
  }

  /**
   * After the log dir came back: each re-opened log read back into its mirror (appends the hooks
   * saw meanwhile, past what was read, kept).
   */
  async #readBack(m: LogManager, alive: () => boolean): Promise<void> {
    for (const { topic, partition, log } of m.logs()) {
      const mirror = this.mirrors.get(`${topic}-${partition}`)
      if (mirror === undefined) continue
      const read = new Mirror()
      await readAll(log, read)
      if (!alive() || m.getLog(topic, partition) !== log) return
      const end = read.batches.at(-1)?.lastOffset ?? -1n
      mirror.batches = [...read.batches, ...mirror.batches.filter((b) => b.baseOffset > end)]
      mirror.verifiedTo = read.verifiedTo
      mirror.complete = true
    }
    if (!m.isOffline) this.#reopening = false
  }

  /** Power loss (`power`) or a killed process (`kill`): everything in memory is gone. */
  crash(kind: 'kill' | 'power', random: Random): void {
    if (!this.up) return
    this.up = false
    this.incarnation++
    this.crashes++
    if (kind === 'kill') this.disk.crash({ processOnly: true })
    else this.disk.crash({ random, tear: true })
    this.rm = null
    this.groups?.close()
    this.groups = null
    this.logManager = null
    this.serving = false
    this.log(`CRASH (${kind})`)
  }

  /** Committed metadata entries from `from`: applied in order, once each. */
  applyMetadata(from: number, entries: readonly CommittedEntry[]): void {
    if (!this.serving || from > this.applied) return
    const fresh = entries.slice(this.applied - from)
    if (fresh.length === 0) return
    this.applied += fresh.length
    this.log(`metadata to ${this.applied}`)
    this.loader.applyCommitted(fresh)
  }

  #pullMetadata(incarnation: number): void {
    if (!this.#alive(incarnation)()) return
    const c = this.#peers.controller
    const from = this.applied
    this.#world.send(this.id, CONTROLLER_ID, () => {
      const entries = c.entries.slice(from, c.committed)
      this.#world.send(CONTROLLER_ID, this.id, () => this.applyMetadata(from, entries))
    })
    this.clock.setTimer(this.#timings.metadataPullMs, () => this.#pullMetadata(incarnation))
  }

  async #register(incarnation: number): Promise<void> {
    const alive = this.#alive(incarnation)
    this.incarnationId ??= randomUuid(this.#random)
    const incarnationId = this.incarnationId
    const c = this.#peers.controller
    while (alive()) {
      try {
        const res = await this.#world.rpc(
          this.id,
          CONTROLLER_ID,
          this.clock,
          this.#timings.requestTimeoutMs,
          () =>
            c.qc.registerBroker({
              brokerId: this.id as BrokerId,
              clusterId: 'sim-cluster',
              incarnationId,
              listeners: [{ name: 'PLAINTEXT', host: `b${this.id}`, port: 9092, securityProtocol: 0 }],
              features: [{ name: 'metadata.version', minSupportedVersion: 1, maxSupportedVersion: 25 }],
              rack: null,
              isMigratingZkBroker: false,
              logDirs: [],
              previousBrokerEpoch: this.brokerEpoch,
            }),
        )
        if (!alive()) return
        if (res.errorCode === ErrorCode.None && res.brokerEpoch !== undefined) {
          this.brokerEpoch = res.brokerEpoch
          this.log(`registered with broker epoch ${res.brokerEpoch}`)
          this.#onRegistered()
          this.#heartbeat(incarnation, 0)
          return
        }
      } catch {
        // lost, timed out, or not the controller: try again
      }
      if (!alive()) return
      await new Promise<void>((resolve) =>
        this.clock.setTimer(this.#timings.heartbeatIntervalMs / 4, resolve),
      )
    }
  }

  #heartbeat(incarnation: number, delayMs: number): void {
    const timer = this.clock.setTimer(delayMs, () => {
      if (this.#heartbeatTimer === timer) this.#heartbeatTimer = null
      void this.#sendHeartbeat(incarnation)
    })
    this.#heartbeatTimer = timer
  }

  /** As node.ts: a failed log dir is reported at once, unless a heartbeat is in flight. */
  #heartbeatSoon(incarnation: number): void {
    if (this.#heartbeatTimer === null) return
    this.clock.clearTimer(this.#heartbeatTimer)
    this.#heartbeat(incarnation, 0)
  }

  async #sendHeartbeat(incarnation: number): Promise<void> {
    const alive = this.#alive(incarnation)
    const c = this.#peers.controller
    const t = this.#timings
    try {
      const res = await this.#world.rpc(this.id, CONTROLLER_ID, this.clock, t.requestTimeoutMs, () =>
        c.qc.brokerHeartbeat({
          brokerId: this.id as BrokerId,
          brokerEpoch: this.brokerEpoch,
          currentMetadataOffset: this.loader.image.provenance.offset,
          wantFence: false,
          wantShutDown: false,
          // As node.ts: a failed log dir is reported until it is back (SimDisk fails only dead incarnations here).
          offlineLogDirs:
            this.logManager?.isOffline === true
              ? [(this.logManager.directoryId ?? SIM_DIRECTORY_ID) as Uuid]
              : [],
        }),
      )
      if (!alive()) return
      if (res.errorCode === ErrorCode.StaleBrokerEpoch) {
        this.log('stale broker epoch: registering again')
        void this.#register(incarnation)
        return
      }
      if (res.errorCode === ErrorCode.None) {
        const fenced = res.isFenced ?? true
        if (fenced !== this.fenced) this.log(fenced ? 'fenced' : 'unfenced')
        this.fenced = fenced
      }
      this.#heartbeat(incarnation, this.fenced ? t.heartbeatIntervalMs / 10 : t.heartbeatIntervalMs)
    } catch {
      if (alive()) this.#heartbeat(incarnation, t.heartbeatIntervalMs)
    }
  }

  /** The fetcher's port to a leader: the leader broker's ReplicaManager, across the network. */
  #leaderLink(leader: BrokerId, incarnation: number): LeaderLink {
    const world = this.#world
    const peers = this.#peers
    const clock = this.clock
    const t = this.#timings
    const self = this.id
    let closed = false
    // Closing the link aborts what is in flight, as closing its connection does.
    const inFlight = new Set<(e: Error) => void>()
    const abortable = <T>(p: Promise<T>): Promise<T> =>
      new Promise<T>((resolve, reject) => {
        inFlight.add(reject)
        p.then(resolve, reject).finally(() => inFlight.delete(reject))
      })
    const target = () => {
      const b = peers.broker(leader)
      if (b.rm === null || !b.serving) throw new Error(`broker ${leader} is not serving`)
      return b
    }
    return {
      fetch: (req: ReplicaFetchRequest): Promise<ReplicaFetchResponse> => {
        if (closed || !this.#alive(incarnation)()) return Promise.reject(new Error('link closed'))
        return abortable(
          world.rpc(self, leader, clock, t.requestTimeoutMs + req.maxWaitMs, async () => {
            const b = target()
            const image = b.loader.image
            const known = req.partitions.map((p) => image.topicsById.get(p.topicId)?.name === p.topic)
            const specs = req.partitions
              .filter((_, i) => known[i])
              .map((p) => ({
                topic: p.topic,
                partition: p.partition,
                fetchOffset: p.fetchOffset,
                maxBytes: p.maxBytes,
                currentLeaderEpoch: p.currentLeaderEpoch,
                lastFetchedEpoch: p.lastFetchedEpoch,
              }))
            const outcomes = await b.rm!.fetchMessages(specs, {
              replicaId: req.replicaId,
              replicaEpoch: req.brokerEpoch,
              maxWaitMs: req.maxWaitMs,
              minBytes: req.minBytes,
              maxBytes: req.maxBytes,
              isolationLevel: 0,
            })
            let at = 0
            const answers = req.partitions.map((_, i): ReplicaFetchAnswer => {
              if (!known[i]) {
                return {
                  errorCode: ErrorCode.UnknownTopicId,
                  highWatermark: -1n,
                  logStartOffset: -1n,
                  divergingEpoch: null,
                  records: Buffer.alloc(0),
                }
              }
              const o = outcomes[at++]!
              return {
                errorCode: o.errorCode,
                highWatermark: o.highWatermark,
                logStartOffset: o.logStartOffset,
                divergingEpoch: o.divergingEpoch,
                records: o.records,
              }
            })
            return { answers, release: () => {} }
          }),
        )
      },
      offsets: (partitions) => {
        if (closed || !this.#alive(incarnation)()) return Promise.reject(new Error('link closed'))
        return abortable(
          world.rpc(self, leader, clock, t.requestTimeoutMs, async () => {
            const b = target()
            const ask = (p: (typeof partitions)[number], timestamp: bigint) =>
              b.rm!.listOffset(p.topic as TopicName, p.partition, {
                timestamp,
                currentLeaderEpoch: p.currentLeaderEpoch,
                isolationLevel: 0,
                replicaId: self,
              })
            const out: Array<{ errorCode: ErrorCode; logStartOffset: bigint; logEndOffset: bigint }> = []
            for (const p of partitions) {
              const earliest = await ask(p, -2n)
              const latest = await ask(p, -1n)
              out.push({
                errorCode: earliest.errorCode !== ErrorCode.None ? earliest.errorCode : latest.errorCode,
                logStartOffset: earliest.offset,
                logEndOffset: latest.offset,
              })
            }
            return out
          }),
        )
      },
      close: () => {
        closed = true
        for (const reject of [...inFlight]) reject(new Error('link closed'))
      },
    }
  }
}

/** Reads a whole log's batch headers into `mirror`. */
async function readAll(log: PartitionLog, mirror: Mirror): Promise<void> {
  let offset = log.logStartOffset
  mirror.verifiedTo = offset
  while (offset < log.logEndOffset) {
    const r = await log.read(offset, 1 << 20)
    if (r.errorCode !== 0 || !('records' in r) || r.records.length === 0) break
    const buf = r.records
    let at = 0
    let next = offset
    while (at + 61 <= buf.length) {
      const h = readBatchHeader(buf, at)
      mirror.add(h)
      next = h.baseOffset + BigInt(h.lastOffsetDelta) + 1n
      at += 12 + h.batchLength
    }
    if (next <= offset) break
    offset = next
  }
}

/**
 * The replica fetcher's link to a leader over the wire: Fetch (v12+, for `lastFetchedEpoch` and
 * divergence; v15+ carries `replicaState` with this broker's epoch) and ListOffsets as a replica,
 * on the leader's inter-broker listener from its registration. Sessionless full fetches (session id 0,
 * epoch -1). It connects lazily and reconnects after a failure.
 */
import {
  type ClientSecurity,
  connectionSecurity,
  type FrameBuffers,
  KafkaConnection,
} from '../client/index.ts'
import type { Clock, Transport } from '../io/index.ts'
import type { MetadataImage } from '../metadata/index.ts'
import { type BrokerId, type TopicName, Uuid } from '../model/index.ts'
import { apis, ErrorCode, errorCodeOf } from '../protocol/index.ts'
import type {
  LeaderLink,
  ReplicaFetchAnswer,
  ReplicaFetchRequest,
  ReplicaFetchResponse,
} from './replica-fetcher.ts'

/** The oldest Fetch version with `lastFetchedEpoch` (and so divergence answers). */
const FETCH_VERSION_MIN = 12
const EMPTY = Buffer.alloc(0)

export interface WireLeaderLinkOptions {
  readonly leader: BrokerId
  readonly nodeId: BrokerId
  readonly image: () => MetadataImage
  /** `inter.broker.listener.name`; null: the leader's first registered endpoint. */
  readonly listenerName: string | null
  readonly clock: Clock
  readonly transport: Transport
  /** How the inter-broker listener is secured; default PLAINTEXT. */
  readonly security?: ClientSecurity
  /** `replica.socket.timeout.ms` */
  readonly requestTimeoutMs: number
  /** Largest response accepted (`replica.fetch.response.max.bytes` and headroom). */
  readonly responseBytesMax: number
  /** The node's read-buffer pool: large Fetch responses are assembled in it (`requestHeld`). */
  readonly frameBuffers?: FrameBuffers
}

export class WireLeaderLink implements LeaderLink {
  readonly #o: WireLeaderLinkOptions
  #conn: Promise<KafkaConnection> | null = null
  #closed = false

  constructor(options: WireLeaderLinkOptions) {
    this.#o = options
  }

  async #connection(): Promise<KafkaConnection> {
    if (this.#closed) throw new Error('the link is closed')
    if (this.#conn !== null) {
      const c = await this.#conn.catch(() => null)
      if (c !== null && !c.closed) return c
      this.#conn = null
    }
    const b = this.#o.image().brokers.get(this.#o.leader)
    const endpoint =
      this.#o.listenerName === null
        ? b?.endpoints[0]
        : b?.endpoints.find((e) => e.name === this.#o.listenerName)
    if (endpoint === undefined) throw new Error(`leader ${this.#o.leader} has no endpoint registered`)
    const opening = KafkaConnection.open(
      { host: endpoint.host, port: endpoint.port },
      {
        clientId: `broker-${this.#o.nodeId}-fetcher`,
        clock: this.#o.clock,
        ...connectionSecurity(this.#o.security, this.#o.transport),
        requestTimeoutMs: this.#o.requestTimeoutMs,
        inFlightRequestsMax: 1,
        responseBytesMax: this.#o.responseBytesMax,
        connectTimeoutMs: Math.min(this.#o.requestTimeoutMs, 10_000),
        ...(this.#o.frameBuffers === undefined ? {} : { frameBuffers: this.#o.frameBuffers }),
      },
    )
    this.#conn = opening
    const c = await opening.catch((e: unknown) => {
      this.#conn = null
      throw e
    })
    if (this.#closed) c.close()
    return c
  }

  async fetch(req: ReplicaFetchRequest): Promise<ReplicaFetchResponse> {
    const c = await this.#connection()
    const version = c.versionFor(apis.Fetch)
    if (version === undefined || version < FETCH_VERSION_MIN) {
      c.close()
      throw new Error(`leader ${this.#o.leader} does not serve Fetch v${FETCH_VERSION_MIN}+`)
    }
    const topics = new Map<
      string,
      { topic: TopicName; topicId: Uuid; partitions: ReplicaFetchRequest['partitions'][number][] }
    >()
    for (const p of req.partitions) {
      const t = topics.get(p.topicId) ?? { topic: p.topic, topicId: p.topicId, partitions: [] }
      t.partitions.push(p)
      topics.set(p.topicId, t)
    }
    const held = await c.requestHeld(
      apis.Fetch,
      version,
      {
        clusterId: null,
        ...(version >= 15
          ? { replicaState: { replicaId: req.replicaId, replicaEpoch: req.brokerEpoch } }
          : { replicaId: req.replicaId }),
        maxWaitMs: req.maxWaitMs,
        minBytes: req.minBytes,
        maxBytes: req.maxBytes,
        isolationLevel: 0,
        sessionId: 0,
        sessionEpoch: -1,
        topics: [...topics.values()].map((t) => ({
          topic: t.topic,
          topicId: t.topicId,
          partitions: t.partitions.map((p) => ({
            partition: p.partition,
            currentLeaderEpoch: p.currentLeaderEpoch,
            fetchOffset: p.fetchOffset,
            lastFetchedEpoch: p.lastFetchedEpoch,
            logStartOffset: p.logStartOffset,
            partitionMaxBytes: p.maxBytes,
          })),
        })),
        forgottenTopicsData: [],
        rackId: '',
      },
      { timeoutMs: this.#o.requestTimeoutMs + req.maxWaitMs },
    )
    // Nothing below throws: the caller releases the response once it has applied the answers.
    const res = held.body
    const byKey = new Map<string, ReplicaFetchAnswer>()
    const failed = (errorCode: ErrorCode): ReplicaFetchAnswer => ({
      errorCode,
      highWatermark: -1n,
      logStartOffset: -1n,
      divergingEpoch: null,
      records: EMPTY,
    })
    for (const t of res.responses) {
      const id = version >= 13 ? t.topicId : (topics.get(t.topicId)?.topicId ?? findId(topics, t.topic))
      for (const p of t.partitions) {
        const d = p.divergingEpoch
        byKey.set(`${id}:${p.partitionIndex}`, {
          errorCode: errorCodeOf(p.errorCode),
          highWatermark: p.highWatermark,
          logStartOffset: p.logStartOffset,
          divergingEpoch:
            d.epoch >= 0 || d.endOffset >= 0n ? { epoch: d.epoch, endOffset: d.endOffset } : null,
          records: p.records ?? EMPTY,
        })
      }
    }
    const topLevel = errorCodeOf(res.errorCode)
    return {
      answers: req.partitions.map(
        (p) =>
          byKey.get(`${p.topicId}:${p.partition}`) ??
          failed(topLevel !== ErrorCode.None ? topLevel : ErrorCode.UnknownServerError),
      ),
      release: held.release,
    }
  }

  async offsets(
    partitions: ReadonlyArray<{ topic: TopicName; partition: number; currentLeaderEpoch: number }>,
  ): Promise<Array<{ errorCode: ErrorCode; logStartOffset: bigint; logEndOffset: bigint }>> {
    const c = await this.#connection()
    const version = c.versionFor(apis.ListOffsets)
    if (version === undefined || version < 4)
      throw new Error(`leader ${this.#o.leader} does not serve ListOffsets v4+`)
    const ask = async (timestamp: bigint) => {
      const res = await c.request(apis.ListOffsets, version, {
        replicaId: this.#o.nodeId,
        isolationLevel: 0,
        topics: partitions.map((p) => ({
          name: p.topic,
          partitions: [{ partitionIndex: p.partition, currentLeaderEpoch: p.currentLeaderEpoch, timestamp }],
        })),
        timeoutMs: this.#o.requestTimeoutMs,
      })
      return partitions.map((p) => {
        const r = res.topics
          .find((t) => t.name === p.topic)
          ?.partitions.find((x) => x.partitionIndex === p.partition)
        return {
          errorCode: errorCodeOf(r?.errorCode ?? ErrorCode.UnknownServerError),
          offset: r?.offset ?? -1n,
        }
      })
    }
    const earliest = await ask(-2n)
    const latest = await ask(-1n)
    return partitions.map((_, i) => {
      const e = earliest[i]!
      const l = latest[i]!
      return {
        errorCode: e.errorCode !== ErrorCode.None ? e.errorCode : l.errorCode,
        logStartOffset: e.offset,
        logEndOffset: l.offset,
      }
    })
  }

  close(): void {
    this.#closed = true
    const c = this.#conn
    this.#conn = null
    void c?.then((x) => x.close()).catch(() => {})
  }
}

function findId(topics: ReadonlyMap<string, { topic: TopicName; topicId: Uuid }>, name: TopicName): Uuid {
  for (const t of topics.values()) if (t.topic === name) return t.topicId
  return Uuid('')
}

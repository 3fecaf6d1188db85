/**
 * A client's view of a cluster: bootstrap, a metadata cache (brokers, topics, partition leaders),
 * one pooled connection per broker, routing to partition leaders and group coordinators, and
 * retries with backoff when the cluster moved (NOT_LEADER_OR_FOLLOWER, NOT_COORDINATOR, a closed
 * connection). What requests mean is the caller's business; this knows only where to send them.
 */
import type { Clock, Transport } from '../io/index.ts'
import { TopicName } from '../model/index.ts'
import { type Api, apis, ErrorCode, errorCodeOf, type MetadataResponseData } from '../protocol/index.ts'
import { type ClientSecurity, PLAINTEXT_SECURITY, securedTransport } from './client-security.ts'
import { ConnectionError, KafkaConnection } from './kafka-connection.ts'
import { KafkaError } from './kafka-error.ts'

export interface ClusterClientOptions {
  /** host:port pairs to bootstrap from. */
  readonly bootstrap: readonly string[]
  readonly clientId?: string
  readonly clock: Clock
  readonly transport: Transport
  /** `request.timeout.ms`; default 30000. */
  readonly requestTimeoutMs?: number
  /** Requests in flight per connection (`max.in.flight.requests.per.connection`); default 5. */
  readonly inFlightRequestsMax?: number
  /** How long operations retry a moved cluster before giving up; default 30000 ms. */
  readonly retryTimeoutMs?: number
  /** `retry.backoff.ms`; default 100. */
  readonly retryBackoffMs?: number
  /**
   * How every connection is secured (`clientSecurityFromProperties`): TLS over `transport` for SSL
   * and SASL_SSL, SASL before use for SASL_*; default PLAINTEXT.
   */
  readonly security?: ClientSecurity
}

export interface BrokerInfo {
  readonly nodeId: number
  readonly host: string
  readonly port: number
  readonly rack: string | null
}

export interface PartitionInfo {
  readonly partition: number
  readonly leader: number
  readonly leaderEpoch: number
  readonly replicas: readonly number[]
  readonly isr: readonly number[]
  readonly offline: readonly number[]
  readonly errorCode: ErrorCode
}

export interface TopicInfo {
  readonly name: string
  readonly topicId: string
  readonly internal: boolean
  readonly errorCode: ErrorCode
  readonly partitions: readonly PartitionInfo[]
}

export interface ClusterMetadata {
  readonly clusterId: string | null
  readonly controllerId: number
  readonly brokers: ReadonlyMap<number, BrokerInfo>
  readonly topics: ReadonlyMap<string, TopicInfo>
}

/** Errors after which refreshing metadata (or the coordinator) and retrying may succeed. */
const REFRESH_ERRORS: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  ErrorCode.NotLeaderOrFollower,
  ErrorCode.LeaderNotAvailable,
  ErrorCode.UnknownTopicOrPartition,
  ErrorCode.NotCoordinator,
  ErrorCode.CoordinatorNotAvailable,
  ErrorCode.CoordinatorLoadInProgress,
  ErrorCode.FencedLeaderEpoch,
  ErrorCode.UnknownLeaderEpoch,
  ErrorCode.NotController,
  ErrorCode.RequestTimedOut,
  ErrorCode.NotEnoughReplicas,
  ErrorCode.KafkaStorageError,
  ErrorCode.BrokerNotAvailable,
])

/** Whether an error (a KafkaError or a lost connection) is worth a metadata refresh and a retry. */
export function isRetriable(e: unknown): boolean {
  if (e instanceof ConnectionError) return true
  if (e instanceof KafkaError) return REFRESH_ERRORS.has(e.code) || e.retriable
  return false
}

/** Parses `host:port[,host:port...]`; IPv6 as `[::1]:9092`. Throws on anything else. */
export function parseBootstrap(list: string): string[] {
  const out = list
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
  for (const s of out) if (hostPort(s) === undefined) throw new Error(`'${s}' is not HOST:PORT`)
  if (out.length === 0) throw new Error('no bootstrap servers')
  return out
}

function hostPort(s: string): { host: string; port: number } | undefined {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(s)
  if (m === null) return undefined
  const port = Number(m[3])
  if (port < 1 || port > 65535) return undefined
  return { host: (m[1] ?? m[2])!, port }
}

export class ClusterClient {
  readonly #o: Required<ClusterClientOptions>
  readonly #transport: Transport
  readonly #connections = new Map<string, Promise<KafkaConnection>>()
  #metadata: ClusterMetadata | null = null
  #refreshing: Promise<ClusterMetadata> | null = null
  /** Topics the cache tracks (every topic when null). */
  readonly #interest = new Set<string>()
  readonly #coordinators = new Map<string, number>()
  /**
   * Brokers (host:port) asked last: whose Metadata answer was behind the cache, or whose connection
   * or request failed. `any()` tries them after the others, so one lagging or unreachable broker
   * (a node restarted and still replaying its metadata, a hung node) is not asked first every time.
   * An address leaves the set when it connects (unreachable) or answers up to date (lagging).
   */
  readonly #lagging = new Set<string>()
  readonly #unreachable = new Set<string>()
  #closed = false

  constructor(options: ClusterClientOptions) {
    this.#o = {
      clientId: 'weir',
      requestTimeoutMs: 30_000,
      inFlightRequestsMax: 5,
      retryTimeoutMs: 30_000,
      retryBackoffMs: 100,
      security: PLAINTEXT_SECURITY,
      ...options,
    }
    this.#transport = securedTransport(this.#o.security, this.#o.transport)
  }

  get clock(): Clock {
    return this.#o.clock
  }

  /** How long operations retry a moved cluster (`retryTimeoutMs`). */
  get retryTimeoutMs(): number {
    return this.#o.retryTimeoutMs
  }

  get metadataCache(): ClusterMetadata | null {
    return this.#metadata
  }

  /** A connection to `host:port`, opened once and reopened after it closed. */
  async connectTo(address: string): Promise<KafkaConnection> {
    if (this.#closed) throw new ConnectionError('client closed')
    const existing = this.#connections.get(address)
    if (existing !== undefined) {
      const c = await existing.catch(() => null)
      if (c !== null && !c.closed) return c
      if (this.#connections.get(address) === existing) this.#connections.delete(address)
      const again = this.#connections.get(address)
      if (again !== undefined) return again
    }
    const hp = hostPort(address)
    if (hp === undefined) throw new Error(`'${address}' is not HOST:PORT`)
    const opening = KafkaConnection.open(hp, {
      clientId: this.#o.clientId,
      clock: this.#o.clock,
      transport: this.#transport,
      sasl: this.#o.security.sasl,
      requestTimeoutMs: this.#o.requestTimeoutMs,
      inFlightRequestsMax: this.#o.inFlightRequestsMax,
      responseBytesMax: 256 * 1024 * 1024,
      connectTimeoutMs: Math.min(this.#o.requestTimeoutMs, 10_000),
    })
    this.#connections.set(address, opening)
    opening.then(
      () => this.#unreachable.delete(address),
      () => {
        this.#unreachable.add(address)
        if (this.#connections.get(address) === opening) this.#connections.delete(address)
      },
    )
    return opening
  }

  /**
   * A connection to any broker: known ones first, then the bootstrap list, in order; brokers that
   * lately failed or answered behind the others go last.
   */
  async any(): Promise<KafkaConnection> {
    return this.#anyExcept(new Set())
  }

  /** Addresses to try, best first (see `any`). */
  #candidates(): string[] {
    const known = this.#metadata === null ? [] : [...this.#metadata.brokers.values()].map(address)
    const all = [...new Set([...known, ...this.#o.bootstrap])]
    const rank = (a: string) => (this.#unreachable.has(a) ? 2 : this.#lagging.has(a) ? 1 : 0)
    return all
      .map((a, i) => ({ a, i }))
      .sort((x, y) => rank(x.a) - rank(y.a) || x.i - y.i)
      .map((x) => x.a)
  }

  async #anyExcept(asked: ReadonlySet<string>): Promise<KafkaConnection> {
    let last: unknown = null
    for (const a of this.#candidates()) {
      if (asked.has(a)) continue
      try {
        return await this.connectTo(a)
      } catch (e) {
        last = e
      }
    }
    throw last instanceof Error
      ? last
      : new ConnectionError(`cannot connect to any of ${this.#o.bootstrap.join(', ')}`)
  }

  /** A connection to broker `nodeId` (from the metadata cache; refreshed when unknown). */
  async broker(nodeId: number): Promise<KafkaConnection> {
    let b = this.#metadata?.brokers.get(nodeId)
    if (b === undefined) b = (await this.refresh()).brokers.get(nodeId)
    if (b === undefined)
      throw new KafkaError(ErrorCode.BrokerNotAvailable, `broker ${nodeId} is not in the metadata`)
    return this.connectTo(address(b))
  }

  /**
   * Sends a request at the highest version both sides serve (at most `maxVersion`), to `to`: a
   * connection, a broker id, or any broker. Throws KafkaError(UNSUPPORTED_VERSION) when there is none.
   */
  async request<Res, ReqIn>(
    api: Api<unknown, ReqIn, Res, never>,
    body: ReqIn | ((version: number) => ReqIn),
    options: { to?: number | KafkaConnection; maxVersion?: number; timeoutMs?: number } = {},
  ): Promise<{ response: Res; version: number; connection: KafkaConnection }> {
    const to = options.to
    const connection =
      to === undefined ? await this.any() : typeof to === 'number' ? await this.broker(to) : to
    const version = pickVersion(
      connection,
      api as unknown as Api<unknown, never, unknown, never>,
      options.maxVersion,
    )
    const b = typeof body === 'function' ? (body as (v: number) => ReqIn)(version) : body
    const response = await connection.request(
      api,
      version,
      b,
      options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs },
    )
    return { response, version, connection }
  }

  /** Adds topics the cache keeps up to date (Metadata asks for these, or for all when asked to). */
  track(topics: Iterable<string>): void {
    for (const t of topics) this.#interest.add(t)
  }

  /**
   * Fetches metadata. With `all`, every topic; otherwise the tracked ones (none: brokers only).
   * Concurrent callers share one request.
   */
  async refresh(options: { all?: boolean; topics?: readonly string[] } = {}): Promise<ClusterMetadata> {
    if (options.topics !== undefined) this.track(options.topics)
    if (this.#refreshing !== null && options.all !== true) return this.#refreshing
    const topics = options.all === true ? null : [...this.#interest]
    const p = this.#fetchMetadata(topics)
    if (options.all !== true) this.#refreshing = p
    try {
      return await p
    } finally {
      if (this.#refreshing === p) this.#refreshing = null
    }
  }

  /**
   * Metadata from one broker; from another when its answer is behind the cache (a partition's
   * leader epoch older than the one cached, or a cached topic missing: KIP-320's rule that a
   * client never goes back to an older leader epoch) or its request fails. When every broker
   * answers behind (a topic deleted, say), the last answer is taken, older partitions excepted.
   */
  async #fetchMetadata(topics: string[] | null): Promise<ClusterMetadata> {
    const asked = new Set<string>()
    let failure: unknown = null
    let last: MetadataResponse | null = null
    for (;;) {
      let connection: KafkaConnection
      try {
        connection = await this.#anyExcept(asked)
      } catch (e) {
        if (last !== null) break
        throw failure ?? e
      }
      const from = address(connection.address)
      asked.add(from)
      let response: MetadataResponse
      try {
        ;({ response } = await this.request(
          apis.Metadata,
          {
            topics: topics === null ? null : topics.map((name) => ({ name: TopicName(name) })),
            allowAutoTopicCreation: false,
          },
          { to: connection },
        ))
      } catch (e) {
        if (!(e instanceof ConnectionError)) throw e
        this.#unreachable.add(from)
        failure = e
        continue
      }
      last = response
      const merged = this.#merge(response, topics, false)
      if (!merged.behind) {
        this.#lagging.delete(from)
        this.#metadata = merged.metadata
        return merged.metadata
      }
      this.#lagging.add(from)
    }
    // Every broker reachable answered behind the cache: a topic is gone; partitions keep their epochs.
    this.#metadata = this.#merge(last, topics, true).metadata
    return this.#metadata
  }

  /** The cache updated with a Metadata response; `behind` when it is older than the cache. */
  #merge(
    response: MetadataResponse,
    topics: string[] | null,
    missingTopicsGone: boolean,
  ): { metadata: ClusterMetadata; behind: boolean } {
    const cached = this.#metadata?.topics ?? new Map<string, TopicInfo>()
    let behind = false
    const brokers = new Map<number, BrokerInfo>(
      response.brokers.map((b) => [b.nodeId, { nodeId: b.nodeId, host: b.host, port: b.port, rack: b.rack }]),
    )
    const byName = new Map<string, TopicInfo>(topics === null ? [] : cached)
    const answered = new Set<string>()
    for (const t of response.topics) {
      if (t.name === null) continue
      answered.add(t.name)
      const known = cached.get(t.name)
      const knownOk = known !== undefined && known.errorCode === ErrorCode.None
      if (knownOk && t.errorCode === ErrorCode.UnknownTopicOrPartition && !missingTopicsGone) {
        // This broker does not know a topic another one told us about: it is behind (or the topic
        // was deleted, which the other brokers will confirm).
        behind = true
        byName.set(t.name, known)
        continue
      }
      const sameTopic = knownOk && t.errorCode === ErrorCode.None && known.topicId === t.topicId
      const partitions = t.partitions
        .map((p): PartitionInfo => {
          const was = sameTopic ? known.partitions.find((k) => k.partition === p.partitionIndex) : undefined
          if (was !== undefined && p.leaderEpoch < was.leaderEpoch) {
            behind = true
            return was
          }
          return {
            partition: p.partitionIndex,
            leader: p.leaderId,
            leaderEpoch: p.leaderEpoch,
            replicas: p.replicaNodes,
            isr: p.isrNodes,
            offline: p.offlineReplicas,
            errorCode: errorCodeOf(p.errorCode),
          }
        })
        .sort((a, b) => a.partition - b.partition)
      byName.set(t.name, {
        name: t.name,
        topicId: t.topicId,
        internal: t.isInternal,
        errorCode: errorCodeOf(t.errorCode),
        partitions,
      })
    }
    if (topics === null && !missingTopicsGone)
      for (const [name, t] of cached)
        if (t.errorCode === ErrorCode.None && !answered.has(name) && this.#interest.has(name)) {
          behind = true
          byName.set(name, t)
        }
    return {
      metadata: {
        clusterId: response.clusterId,
        controllerId: response.controllerId,
        brokers,
        topics: byName,
      },
      behind,
    }
  }

  /** A topic's partitions; throws KafkaError(UNKNOWN_TOPIC_OR_PARTITION) when it does not exist. */
  async topic(name: string, options: { refresh?: boolean } = {}): Promise<TopicInfo> {
    this.track([name])
    let t = options.refresh === true ? undefined : this.#metadata?.topics.get(name)
    if (t === undefined || t.errorCode !== ErrorCode.None) t = (await this.refresh()).topics.get(name)
    if (t === undefined)
      throw new KafkaError(ErrorCode.UnknownTopicOrPartition, `topic '${name}' does not exist`)
    if (t.errorCode !== ErrorCode.None)
      throw new KafkaError(
        t.errorCode,
        t.errorCode === ErrorCode.UnknownTopicOrPartition ? `topic '${name}' does not exist` : null,
      )
    return t
  }

  /** The leader of a partition from the cache (refreshing once when unknown). */
  async leaderOf(topic: string, partition: number): Promise<number> {
    const find = (t: TopicInfo) => t.partitions.find((p) => p.partition === partition)
    let p = find(await this.topic(topic))
    if (p === undefined || p.leader < 0) p = find(await this.topic(topic, { refresh: true }))
    if (p === undefined)
      throw new KafkaError(ErrorCode.UnknownTopicOrPartition, `${topic} has no partition ${partition}`)
    if (p.leader < 0)
      throw new KafkaError(ErrorCode.LeaderNotAvailable, `${topic}-${partition} has no leader`)
    return p.leader
  }

  /** The coordinator of a group (FindCoordinator, cached until `forgetCoordinator`). */
  async coordinator(groupId: string): Promise<number> {
    const cached = this.#coordinators.get(groupId)
    if (cached !== undefined) return cached
    const { response, version } = await this.request(apis.FindCoordinator, (v) =>
      v >= 4 ? { keyType: 0, coordinatorKeys: [groupId] } : { key: groupId, keyType: 0 },
    )
    const c = version >= 4 ? response.coordinators[0] : response
    if (c === undefined) throw new KafkaError(ErrorCode.CoordinatorNotAvailable)
    if (c.errorCode !== ErrorCode.None) throw new KafkaError(c.errorCode, c.errorMessage)
    this.#coordinators.set(groupId, c.nodeId)
    return c.nodeId
  }

  forgetCoordinator(groupId: string): void {
    this.#coordinators.delete(groupId)
  }

  /**
   * Runs `op` until it succeeds, a non-retriable error, or the retry timeout; after a retriable
   * failure, metadata is refreshed (and `onRetry` runs) before the next attempt after a backoff.
   */
  async retrying<T>(op: () => Promise<T>, onRetry?: (e: unknown) => void): Promise<T> {
    const deadline = this.#o.clock.monotonicMs() + this.#o.retryTimeoutMs
    let backoff = this.#o.retryBackoffMs
    for (;;) {
      try {
        return await op()
      } catch (e) {
        if (!isRetriable(e) || this.#closed || this.#o.clock.monotonicMs() + backoff > deadline) throw e
        onRetry?.(e)
        await this.sleep(backoff)
        backoff = Math.min(backoff * 2, 1000)
        await this.refresh().catch(() => {})
      }
    }
  }

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.#o.clock.setTimer(ms, resolve))
  }

  close(): void {
    this.#closed = true
    for (const c of this.#connections.values()) c.then((x) => x.close()).catch(() => {})
    this.#connections.clear()
  }
}

type MetadataResponse = MetadataResponseData.MetadataResponse

function address(b: { readonly host: string; readonly port: number }): string {
  return b.host.includes(':') ? `[${b.host}]:${b.port}` : `${b.host}:${b.port}`
}

/** The highest version both sides serve, at most `cap`. */
export function pickVersion(
  connection: KafkaConnection,
  api: Api<unknown, never, unknown, never>,
  cap?: number,
): number {
  const theirs = connection.peerVersions.get(api.apiKey)
  const max = Math.min(theirs?.maxVersion ?? -1, api.maxVersion, cap ?? Number.POSITIVE_INFINITY)
  if (theirs === undefined || max < Math.max(theirs.minVersion, api.minVersion))
    throw new KafkaError(
      ErrorCode.UnsupportedVersion,
      `${connection.address.host}:${connection.address.port} serves no version of ${api.name} this client speaks`,
    )
  return max
}

/**
 * The composition root: one Weir node from its configs. It wires the quorum (voter or observer),
 * the metadata loader, the controller (when a voter), the broker's log directories and lifecycle
 * (registration, heartbeats), and the listeners with their handlers; then stops them in order.
 */
import { getHeapStatistics } from 'node:v8'
import { type ClientSecurity, isAuthenticationError, PLAINTEXT_SECURITY } from '../client/index.ts'
import {
  AUTHORIZER_KEYS,
  type ConfigLayer,
  type EffectiveConfig,
  resolveBrokerConfig,
  validateBrokerConfigs,
  validateTopicConfigs,
} from '../config/index.ts'
import { ConsoleHttp } from '../console/index.ts'
import {
  brokerConfigLayers,
  createdTopicConfigs,
  type NodeConfigSource,
  QuorumController,
  randomUuid,
} from '../controller/index.ts'
import {
  type Clock,
  type Disk,
  isNotFound,
  joinPath,
  NodeDisk,
  nodeTransport,
  type Random,
  systemClock,
  systemRandom,
  type Transport,
} from '../io/index.ts'
import { EMPTY_IMAGE, type MetadataImage, MetadataLoader, scramCredential } from '../metadata/index.ts'
import { BrokerId, Uuid } from '../model/index.ts'
import { ErrorCode } from '../protocol/index.ts'
import { Quorum } from '../quorum/index.ts'
import { authorizerConfig, type ScramCredentialLookup } from '../security/index.ts'
import {
  Dispatcher,
  externalMemoryInGlobalLimit,
  GC_EVERY_READ_BYTES_DEFAULT,
  GC_MAJOR_EVERY_COLLECTIONS,
  HandlerRegistry,
  Listener,
  type ListenerTls,
  ReadGcPacer,
  saslApiHandlers,
  v8Gc,
} from '../server/index.ts'
import {
  formatMetaProperties,
  type LogConfig,
  LogManager,
  MetaPropertiesError,
  parseMetaProperties,
  ReadBufferPool,
  writeFileDurably,
} from '../storage/index.ts'
import { AclPublisher, authorizerConfigured } from './acl-publisher.ts'
import { type BootstrapScram, bootstrapScramRecords } from './bootstrap-scram.ts'
import { ConnectionLimitsError, connectionQuotas, listenerConnectionsMax } from './connection-limits.ts'
import { ControllerChannel } from './controller-channel.ts'
import { DataPath } from './data-path.ts'
import { GroupCoordination, internalTopicRequest } from './group-coordination.ts'
import { HTTP_LISTENER_NAME, HttpListener, HttpListenersError, parseHttpListeners } from './http-listener.ts'
import {
  consoleSecurity,
  isListenerPrefixedKey,
  type ListenerSecurity,
  ListenerSecurityError,
  type ListenerSecuritySources,
  listenerSecurity,
  listenerTlsOf,
  outgoingSecurity,
} from './listener-security.ts'
import { LOGGER_NAMES, NodeLogs } from './logs.ts'
import {
  BOOTSTRAP_FEATURES,
  brokerListenerApis,
  controllerListenerApis,
  type NodeApiParts,
  SUPPORTED_FEATURES,
} from './node-apis.ts'
import { type ListenerSpec, type NodeConfig, nodeConfig } from './node-config.ts'
import { NodeMetrics } from './node-metrics.ts'
import { TlsReload } from './tls-reload.ts'
import { topicLogConfig, updateLogConfigs } from './topic-log-config.ts'
import { TransactionCoordination } from './transaction-coordination.ts'

export type LogLevel = 'info' | 'warn' | 'error'
export type Logger = (level: LogLevel, message: string) => void

export interface WeirNodeOptions {
  /** server.properties with `--set` overrides applied (the STATIC_BROKER_CONFIG layer). */
  readonly staticConfig: ReadonlyMap<string, string>
  readonly disk?: Disk
  readonly clock?: Clock
  readonly random?: Random
  readonly transport?: Transport
  readonly log?: Logger
  /** The node's loggers with run-time levels (`weir start`); default: all of them over `log`. */
  readonly logs?: NodeLogs
  /** SCRAM credentials a new cluster starts with (`weir start --add-scram`, as `kafka-storage format`). */
  readonly bootstrapScram?: readonly BootstrapScram[]
}

/**
 * Bytes of requests a connection reads ahead of the one being handled (consecutive Produces overlap
 * up to it, sharing a group-commit fsync): 8 MiB, not socket.request.max.bytes (100 MiB). A client
 * with many produces in flight (librdkafka) otherwise had ~60 MB of 1 MB frames queued under
 * acks=all: peak RSS 152-194 MB against 140-142 MB, produce rates alike (docs/performance.md).
 */
const READ_AHEAD_BYTES_MAX = 8 * 1024 * 1024
/**
 * The longest a stopping broker serves while it waits for the controller to take its leaderships
 * and for the other brokers to apply that (they report it in heartbeats, every
 * `broker.heartbeat.interval.ms`, 2 s by default).
 */
const CONTROLLED_SHUTDOWN_MS_MAX = 5000
/** How often a broker waiting to shut down asks the controller again (after 50 ms the first time). */
const CONTROLLED_SHUTDOWN_POLL_MS = 100
const METADATA_DIR = '__cluster_metadata-0'
/** When a broker's client listeners still hold their connections, the first log line says why. */
const HELD_LOG_FIRST_MS = 5_000
const HELD_LOG_INTERVAL_MS = 30_000
/** Weir's own static key: the cluster id a node formats its directories with when they are new. */
export const CLUSTER_ID_KEY = 'cluster.id'

export class StartupError extends Error {
  override name = 'StartupError'
}

interface BoundListener {
  readonly spec: ListenerSpec
  readonly listener: Listener
  readonly registry: HandlerRegistry
  readonly isController: boolean
  /** SASL_PLAINTEXT or SASL_SSL: its registry also holds SaslHandshake and SaslAuthenticate. */
  readonly sasl: boolean
}

/**
 * SCRAM authentication's credentials: the UserScramCredentialRecords of the node's latest metadata
 * image (AlterUserScramCredentials, `weir start --add-scram`); null for an unknown user.
 */
function scramCredentialsOf(image: () => MetadataImage): ScramCredentialLookup {
  return (mechanism, username) => scramCredential(image(), mechanism, username) ?? null
}

/** A listener's TLS and SASL, or the StartupError that names the key at fault. */
function securityOf(spec: ListenerSpec, sources: ListenerSecuritySources): ListenerSecurity {
  try {
    return listenerSecurity(spec, sources)
  } catch (e) {
    if (e instanceof ListenerSecurityError) throw new StartupError(`invalid configuration: ${e.message}`)
    throw e
  }
}

/** An https HTTP listener's TLS (`listener.name.http.ssl.*`, else the broker's `ssl.*`). */
function httpsTls(sources: ListenerSecuritySources): ListenerTls {
  try {
    return listenerTlsOf({ name: HTTP_LISTENER_NAME }, sources)
  } catch (e) {
    if (e instanceof ListenerSecurityError) throw new StartupError(`invalid configuration: ${e.message}`)
    throw e
  }
}

/**
 * The web console of the node's HTTP listeners. It connects to one of the node's own broker
 * listeners as a client would: a SASL one first (users log in, so ACLs apply to them), else
 * PLAINTEXT, else SSL (the node's truststore; the console then acts as whatever identity that
 * listener maps a client without a certificate to). Null, and said once, when no listener fits.
 */
function consoleOf(
  bound: readonly BoundListener[],
  sources: Pick<ListenerSecuritySources, 'staticBroker' | 'effective'>,
  clock: Clock,
  transport: Transport,
  log: Logger,
): ConsoleHttp | null {
  const brokers = bound.filter((b) => !b.isController)
  const order = ['SASL_SSL', 'SASL_PLAINTEXT', 'PLAINTEXT', 'SSL']
  const chosen = [...brokers].sort(
    (a, b) => order.indexOf(a.spec.protocolName) - order.indexOf(b.spec.protocolName),
  )[0]
  const how = chosen === undefined ? null : consoleSecurity(chosen.spec, sources)
  if (chosen === undefined || how === null) {
    log('warn', 'the web console is off: no broker listener it can log users in through (PLAIN or SCRAM)')
    return null
  }
  const host = ['0.0.0.0', '::', ''].includes(chosen.spec.host) ? '127.0.0.1' : chosen.spec.host
  return new ConsoleHttp({
    bootstrap: [
      `${host.includes(':') ? `[${host}]` : host}:${chosen.listener.address?.port ?? chosen.spec.port}`,
    ],
    security: how.security,
    credentials: how.credentials,
    clock,
    transport,
  })
}

/** How this node's own connections are secured: replica fetchers, and to the controllers. */
interface OutgoingSecurity {
  readonly interBroker: ClientSecurity
  readonly controller: ClientSecurity
}

function outgoingOf(
  config: NodeConfig,
  sources: Pick<ListenerSecuritySources, 'staticBroker' | 'effective'>,
): OutgoingSecurity {
  try {
    const interBroker = config.listeners.find((l) => l.name === config.interBrokerListenerName)
    return {
      interBroker:
        interBroker === undefined
          ? PLAINTEXT_SECURITY
          : outgoingSecurity(interBroker, 'sasl.mechanism.inter.broker.protocol', sources),
      controller: outgoingSecurity(
        { name: config.controllerListenerNames[0]!, protocolName: config.controllerListenerProtocol },
        'sasl.mechanism.controller.protocol',
        sources,
      ),
    }
  } catch (e) {
    if (e instanceof ListenerSecurityError) throw new StartupError(`invalid configuration: ${e.message}`)
    throw e
  }
}

/** A connection limit's refusal as the StartupError that names the key at fault. */
async function startupChecked<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read()
  } catch (e) {
    if (e instanceof ConnectionLimitsError) throw new StartupError(`invalid configuration: ${e.message}`)
    throw e
  }
}

export class WeirNode {
  readonly config: NodeConfig
  readonly clusterId: string
  readonly effective: EffectiveConfig
  readonly #clock: Clock
  readonly #logs: NodeLogs
  readonly #log: Logger
  readonly #listeners: BoundListener[]
  readonly #loader: MetadataLoader
  #quorum: Quorum | null = null
  #controller: QuorumController | null = null
  #channel: ControllerChannel | null = null
  readonly #logManagers: LogManager[] = []
  /** The broker's partitions and the handlers that serve them (null on a controller-only node). */
  #dataPath: DataPath | null = null
  #groups: GroupCoordination | null = null
  #transactions: TransactionCoordination | null = null
  /** The authorizer's ACLs, kept equal to the image's (`authorizer.class.name`). */
  #acls: AclPublisher | null = null
  /** The TLS listeners' dynamic key and trust stores (KIP-226). */
  #tlsReload: TlsReload | null = null
  #bootstrapScram: readonly BootstrapScram[] = []
  #heartbeatTimer: ReturnType<Clock['setTimer']> | null = null
  #incarnationId: Uuid | null = null
  #brokerEpoch = -1n
  /** The replica manager started (after the metadata caught up past this broker's registration). */
  #replicasStarted = false
  /** The controller acknowledged the catch-up (a heartbeat answered `isCaughtUp`). */
  #caughtUpAcknowledged = false
  /** The client listeners serve (they hold their connections until the initial catch-up). */
  #serving = false
  /** Logs, while the client listeners hold their connections, what they wait for. */
  #heldLogTimer: ReturnType<Clock['setTimer']> | null = null
  #fenced = true
  #stopping = false
  #readyWaiters: Array<() => void> = []
  /** server.properties with `--set`, without Weir's own keys: the STATIC_BROKER_CONFIG layer. */
  #staticBroker: ConfigLayer = new Map()
  readonly #http: HttpListener[] = []
  #console: ConsoleHttp | null = null
  #metrics: NodeMetrics | null = null
  /** The node's buffer pool: its listeners' produce frames, its logs' holds, its fetch reads. */
  readonly #pool: ReadBufferPool

  private constructor(
    config: NodeConfig,
    clusterId: string,
    effective: EffectiveConfig,
    clock: Clock,
    logs: NodeLogs,
    listeners: BoundListener[],
    pool: ReadBufferPool,
  ) {
    this.#pool = pool
    this.config = config
    this.clusterId = clusterId
    this.effective = effective
    this.#clock = clock
    this.#logs = logs
    this.#log = logs.logger(LOGGER_NAMES.lifecycle)
    this.#listeners = listeners
    this.#loader = new MetadataLoader()
  }

  static async start(options: WeirNodeOptions): Promise<WeirNode> {
    const staticBroker = withoutWeirKeys(options.staticConfig)
    const logs = options.logs ?? NodeLogs.over(options.log ?? (() => {}))
    const log = logs.logger(LOGGER_NAMES.root)
    const checked = validateBrokerConfigs(staticBroker, 'static')
    if (!checked.ok) throw new StartupError(`invalid configuration: ${checked.key}: ${checked.error}`)
    for (const key of checked.unknown) {
      if (!AUTHORIZER_KEYS.includes(key) && !isListenerPrefixedKey(key))
        log('warn', `unknown config ${key} is ignored`)
    }
    const effective = resolveBrokerConfig({ staticBroker })
    const config = nodeConfig(effective)
    const disk =
      options.disk ?? new NodeDisk({ openFilesMax: effective.int('log.open.files.max') || undefined })
    const clock = options.clock ?? systemClock
    const random = options.random ?? systemRandom
    const transport = options.transport ?? nodeTransport
    const clusterId = await resolveClusterId(disk, config, options.staticConfig.get(CLUSTER_ID_KEY), random)

    const limits = {
      requestBytesMax: effective.int('socket.request.max.bytes'),
      inFlightRequestsMax: Math.max(1, effective.int('queued.max.requests')),
      // A frame up to socket.request.max.bytes is always read (the queue is checked before a frame).
      inFlightBytesMax: Math.min(effective.int('socket.request.max.bytes'), READ_AHEAD_BYTES_MAX),
      connectionsIdleMsMax: effective.long('connections.max.idle.ms'),
    }
    // Kafka's broker and controller each have their socket server, and so their own counts.
    const quotas = await startupChecked(async () => ({
      broker: await connectionQuotas(effective, config.interBrokerListenerName),
      controller: await connectionQuotas(effective, null),
    }))
    // One pacer for the node's listeners: a minor GC per 8 MiB of requests read. The full one per
    // 64 MiB that it also ran where V8 counts ArrayBuffers in its global limit (`weir start`) freed
    // promoted produce frames; with frames pooled it cost produce CPU for no RSS (docs/performance.md,
    // "Memory"), and `WEIR_READ_GC_MAJORS=1` brings it back (read-gc-pacer.ts).
    const collect = v8Gc()
    const readGc =
      collect === null
        ? undefined
        : new ReadGcPacer(
            collect,
            GC_EVERY_READ_BYTES_DEFAULT,
            process.env.WEIR_READ_GC_MAJORS === '1' && externalMemoryInGlobalLimit()
              ? GC_MAJOR_EVERY_COLLECTIONS
              : 0,
          )
    // The node's buffers: its connections assemble produce frames in them, its logs and write tails
    // retain those, its fetches read old data into them (read-buffer-pool.ts).
    const pool = new ReadBufferPool()
    const bound: BoundListener[] = []
    // Request metrics go to the node's registry once it exists (no request is served before).
    const metricsOf: { current: NodeMetrics | null } = { current: null }
    const observe = {
      now: () => clock.monotonicMs(),
      answered: (api: string, ms: number) => metricsOf.current?.observeRequest(api, ms),
    }
    // The image SCRAM logins read: the node's own once it exists (connections are held until then).
    const latest = { image: (): MetadataImage => EMPTY_IMAGE }
    // Every listener checks requests with the authorizer of the moment (it follows the image).
    const acls = aclPublisher(effective, staticBroker)
    const sources = {
      staticBroker,
      effective,
      clock,
      random,
      scramCredential: scramCredentialsOf(() => latest.image()),
    }
    for (const spec of config.listeners) {
      const isController = config.controllerListenerNames.includes(spec.name)
      if (isController ? !config.controller : !config.broker) continue
      const registry = new HandlerRegistry()
      const security = securityOf(spec, sources)
      const listener = new Listener({
        ...security,
        listenerName: spec.name,
        host: spec.host,
        port: spec.port,
        dispatcher: new Dispatcher(registry, { authorizer: () => acls.authorizer, observe }),
        clock,
        limits: {
          ...limits,
          connectionsMax: await startupChecked(async () =>
            listenerConnectionsMax(spec.name, staticBroker, effective),
          ),
        },
        quotas: isController ? quotas.controller : quotas.broker,
        log: logs.logger(LOGGER_NAMES.network),
        held: true,
        ...(readGc === undefined ? {} : { readGc }),
        ...(isController ? {} : { frameBuffers: pool }),
      })
      bound.push({ spec, listener, registry, isController, sasl: security.sasl !== undefined })
    }
    const security = outgoingOf(config, { staticBroker, effective })
    const node = new WeirNode(config, clusterId, effective, clock, logs, bound, pool)
    latest.image = () => node.#loader.image
    node.#staticBroker = staticBroker
    node.#acls = acls
    node.#tlsReload = new TlsReload(
      bound.filter((b) => !b.isController && b.spec.protocolName.endsWith('SSL')),
      sources,
      () => brokerConfigLayers(node.#loader.image, node.configSource),
      logs.logger(LOGGER_NAMES.network),
    )
    node.#bootstrapScram = options.bootstrapScram ?? []
    try {
      for (const b of bound) await b.listener.start()
      let http: ReturnType<typeof parseHttpListeners>
      try {
        http = parseHttpListeners(effective.string('http.listeners') ?? '')
      } catch (e) {
        if (e instanceof HttpListenersError) throw new StartupError(`invalid configuration: ${e.message}`)
        throw e
      }
      // Without an HTTP listener nothing could read the metrics: none are kept (no cost per request).
      if (http.length > 0) {
        const metrics = new NodeMetrics({
          nodeId: config.nodeId,
          image: () => node.#loader.image,
          activeController: () => (config.controller ? (node.#controller?.isActive ?? false) : null),
          quorum: () => node.#quorum?.status() ?? null,
          ready: () => node.#isReady(),
          totals: () => node.#dataPath?.replicas.stats.totals ?? null,
          logSizes: () =>
            node.#logManagers
              .flatMap((m) => m.logs())
              .map((h) => ({ topic: h.topic, partition: h.partition, sizeBytes: h.log.sizeBytes })),
          groupOffsets: () => node.#groups?.coordinator.committedOffsets() ?? [],
          highWatermark: (topic, partition) => node.#dataPath?.replicas.highWatermark(topic, partition),
        })
        metricsOf.current = metrics
        node.#metrics = metrics
        // The console's logins serve its pages and, with http.metrics.authenticate, the metrics
        // and health checks too (open unless asked otherwise).
        const consoleOn = effective.boolean('http.console.enable')
        const metricsLogin = effective.boolean('http.metrics.authenticate')
        const logins =
          consoleOn || metricsLogin
            ? consoleOf(
                bound,
                { staticBroker, effective },
                clock,
                transport,
                logs.logger(LOGGER_NAMES.network),
              )
            : null
        if (metricsLogin && logins?.logsIn !== true)
          throw new StartupError(
            'invalid configuration: http.metrics.authenticate needs a broker listener with SASL PLAIN or SCRAM to check logins against',
          )
        node.#console = logins
        const webConsole = consoleOn ? logins : null
        for (const spec of http) {
          const tls = spec.scheme === 'https' ? httpsTls(sources) : undefined
          node.#http.push(
            await HttpListener.open(
              spec,
              {
                metrics: (openMetrics) => metrics.scrape(openMetrics),
                ready: () => node.#quorum !== null && node.#isReady(),
                console: webConsole,
                authenticate: metricsLogin ? (req) => logins!.authenticated(req) : null,
              },
              tls,
            ),
          )
        }
      }
      await node.#startComponents({ disk, clock, random, transport, security })
    } catch (e) {
      await node.stop().catch(() => {})
      throw e
    }
    return node
  }

  /** The bound `http.listeners` addresses, in their order (ports resolved when configured as 0). */
  httpAddresses(): Array<{ host: string; port: number }> {
    return this.#http.map((h) => h.address)
  }

  /** Bound addresses by listener name (ports resolved when configured as 0). */
  addresses(): Array<{ name: string; host: string; port: number }> {
    return this.#listeners.map((b) => ({
      name: b.spec.name,
      host: this.#advertised(b.spec.name).host,
      port: b.listener.address?.port ?? b.spec.port,
    }))
  }

  #advertised(name: string): ListenerSpec {
    const a = this.config.advertised.find((x) => x.name === name)
    const bound = this.#listeners.find((b) => b.spec.name === name)
    const base = a ?? bound?.spec
    if (base === undefined) throw new StartupError(`no listener ${name}`)
    const port = base.port === 0 ? (bound?.listener.address?.port ?? 0) : base.port
    return { ...base, port }
  }

  get quorum(): Quorum | null {
    return this.#quorum
  }

  get controller(): QuorumController | null {
    return this.#controller
  }

  get image() {
    return this.#loader.image
  }

  /** This node's id and static config: what its dynamic config layers resolve against. */
  get configSource(): NodeConfigSource {
    return { nodeId: this.config.nodeId, staticBroker: this.#staticBroker }
  }

  /** A topic's effective log settings on this node now (see topic-log-config.ts). */
  topicLogConfig(topic: string): LogConfig {
    return topicLogConfig(this.#loader.image, topic, this.configSource)
  }

  async #startComponents(io: {
    disk: Disk
    clock: Clock
    random: Random
    transport: Transport
    security: OutgoingSecurity
  }): Promise<void> {
    const { config, effective } = this
    const settings = {
      defaultNumPartitions: effective.int('num.partitions'),
      defaultReplicationFactor: effective.int('default.replication.factor'),
      deleteTopicEnable: effective.boolean('delete.topic.enable'),
      brokerPartitionsMax: effective.int('max.broker.partitions') || brokerPartitionsMaxDefault(),
    }
    if (config.controller) {
      this.#controller = new QuorumController({
        quorum: {
          propose: (data) => this.#quorum!.propose(data),
          status: () => this.#quorum!.status(),
        },
        clock: io.clock,
        random: io.random,
        clusterId: this.clusterId,
        settings,
        brokerSessionTimeoutMs: effective.int('broker.session.timeout.ms'),
        validateTopicConfigs: (configs) => {
          const r = validateTopicConfigs(configs, brokerConfigLayers(this.image, this.configSource))
          return r.ok ? null : { key: r.key, message: r.error }
        },
        describeTopicConfigs: (_name, overrides) =>
          createdTopicConfigs(this.image, overrides, this.configSource),
        configs: { ...this.configSource, controllerIds: config.voters.map((v) => v.id) },
        bootstrapFeatures: BOOTSTRAP_FEATURES,
        supportedFeatures: SUPPORTED_FEATURES,
        bootstrapRecords: bootstrapScramRecords(this.#bootstrapScram, io.random),
        leaderBalance: {
          enabled: effective.boolean('auto.leader.rebalance.enable'),
          intervalMs: effective.long('leader.imbalance.check.interval.seconds') * 1000,
          percentage: effective.int('leader.imbalance.per.broker.percentage'),
        },
        log: this.#logs.logger(LOGGER_NAMES.controller),
      })
      this.#loader.subscribe((p) => this.#controller?.onPublish(p))
    }
    const acls = this.#acls
    if (acls !== null) this.#loader.subscribe((p) => acls.onPublish(p))
    this.#loader.subscribe(() => this.#tlsReload?.apply())
    if (config.broker) {
      const dataPath = new DataPath({
        nodeId: config.nodeId,
        disk: io.disk,
        clock: io.clock,
        random: io.random,
        effective,
        configSource: () => this.configSource,
        allocateProducerIds: () =>
          this.#channel!.allocateProducerIds({ brokerId: config.nodeId, brokerEpoch: this.#brokerEpoch }),
        alterPartition: (req) => this.#channel!.alterPartition(req),
        brokerEpoch: () => this.#brokerEpoch,
        image: () => this.#loader.image,
        transport: io.transport,
        interBrokerListenerName: config.interBrokerListenerName,
        interBrokerSecurity: io.security.interBroker,
        log: this.#logs.logger(LOGGER_NAMES.replication),
        pool: this.#pool,
        // The group coordinator commits or drops a producer's pending offsets at its marker.
        onTransactionCompleted: (_topic, partition, producerId, producerEpoch, committed) =>
          this.#groups?.onTransactionCompleted(partition, producerId, producerEpoch, committed),
      })
      this.#dataPath = dataPath
      this.#loader.subscribe((p) => dataPath.onPublish(p))
      const transactions = new TransactionCoordination({
        effective,
        clock: io.clock,
        replicas: dataPath.replicas,
        producerIds: dataPath.producerIds,
        image: () => this.#loader.image,
        createInternalTopic: (spec) => this.#channel!.createInternalTopics(internalTopicRequest(spec)),
        transport: io.transport,
        interBrokerListenerName: config.interBrokerListenerName,
        interBrokerSecurity: io.security.interBroker,
        log: this.#logs.logger(LOGGER_NAMES.transactions),
      })
      this.#transactions = transactions
      this.#loader.subscribe(() => transactions.onPublish())
      const groups = new GroupCoordination({
        transactions,
        txnVerifier: dataPath.txnVerifier,
        effective,
        clock: io.clock,
        random: io.random,
        replicas: dataPath.replicas,
        image: () => this.#loader.image,
        createInternalTopic: (spec) => this.#channel!.createInternalTopics(internalTopicRequest(spec)),
        log: this.#logs.logger(LOGGER_NAMES.groups),
      })
      this.#groups = groups
      this.#loader.subscribe(() => groups.onPublish())
    }
    this.#loader.subscribe(() => this.#checkReady())
    const raftConfig = {
      electionTimeoutMs: effective.int('controller.quorum.election.timeout.ms'),
      fetchTimeoutMs: effective.int('controller.quorum.fetch.timeout.ms'),
      electionBackoffMsMax: effective.int('controller.quorum.election.backoff.max.ms'),
      requestTimeoutMs: effective.int('controller.quorum.request.timeout.ms'),
      retryBackoffMs: effective.int('controller.quorum.retry.backoff.ms'),
    }
    this.#quorum = await Quorum.open({
      dir: joinPath(config.metadataLogDir, METADATA_DIR),
      nodeId: config.nodeId,
      voters: config.voters,
      clusterId: this.clusterId,
      disk: io.disk,
      clock: io.clock,
      random: io.random,
      transport: io.transport,
      security: io.security.controller,
      raft: raftConfig,
      log: this.#logs.logger(LOGGER_NAMES.raft),
      listener: {
        onSnapshot: (s) =>
          this.#loader.loadSnapshot(s.bytes, { offset: s.id.endOffset - 1n, epoch: s.id.epoch }),
        onCommitted: (entries) =>
          this.#loader.applyCommitted(
            entries.map((e) =>
              e.kind === 'data'
                ? e
                : { kind: 'leaderChange' as const, offset: e.offset, epoch: e.epoch, leaderId: e.leaderId },
            ),
          ),
        onCommitLatency: (ms) => this.#metrics?.observeCommit(ms),
        onStatus: (s) => {
          this.#controller?.onStatus(s)
          this.#logs.logger(LOGGER_NAMES.raft)(
            'info',
            `quorum: ${s.role} in epoch ${s.epoch}, leader ${s.leaderId ?? 'unknown'}`,
          )
        },
      },
    })
    const quorum = this.#quorum
    this.#channel = new ControllerChannel({
      nodeId: config.nodeId,
      local: this.#controller,
      status: () => quorum.status(),
      voters: config.voters,
      clock: io.clock,
      transport: io.transport,
      security: io.security.controller,
      log: this.#logs.logger(LOGGER_NAMES.lifecycle),
      timeoutMs: 30_000,
    })
    if (config.broker) {
      for (const dir of config.logDirs) {
        this.#logManagers.push(
          await LogManager.open(dir, {
            disk: io.disk,
            clock: io.clock,
            clusterId: this.clusterId,
            nodeId: config.nodeId,
            // Used when meta.properties has no directory.id: the id heartbeats report it offline by.
            directoryId: randomUuid(io.random),
            topicConfig: (topic) => this.topicLogConfig(topic),
            onWarning: (m) => this.#logs.logger(LOGGER_NAMES.storage)('warn', m),
            onFlushed: (ms) => this.#metrics?.observeFlush(ms),
            ...this.#dataPath?.logManagerOptions(),
          }),
        )
      }
      this.#dataPath?.startLogs(this.#logManagers)
      // A failed dir is reported at once (Kafka's propagateDirectoryFailure), not a heartbeat later.
      for (const m of this.#logManagers) m.subscribe({ onOffline: () => this.#heartbeatSoon() })
      this.#loader.subscribe(() => this.#maybeStartReplicas())
      // Dynamic topic and broker configs take effect on open logs as their records commit.
      this.#loader.subscribe((p) =>
        updateLogConfigs(
          p,
          this.#logManagers.flatMap((m) => m.logs()),
          this.configSource,
        ),
      )
    }
    this.#registerHandlers(io)
    if (config.broker) void this.#register(io.random)
  }

  #registerHandlers(io: { clock: Clock }): void {
    const controller = this.#controller
    const node: NodeApiParts = {
      clusterId: this.clusterId,
      nodeId: this.config.nodeId,
      voters: this.config.voters,
      controllerListenerName: this.config.controllerListenerNames[0] ?? 'CONTROLLER',
      image: () => this.#loader.image,
      quorum: this.#quorum!,
      clock: io.clock,
      staticBroker: this.#staticBroker,
      acls: this.#acls!,
      loggers: this.#logs,
    }
    for (const b of this.#listeners) {
      if (b.isController && controller !== null) {
        b.registry.register(...controllerListenerApis(node, b.registry, controller))
        if (b.sasl) b.registry.register(...saslApiHandlers())
        continue
      }
      b.registry.register(
        ...brokerListenerApis(node, b.registry, {
          channel: this.#channel!,
          autoCreateTopics: this.effective.boolean('auto.create.topics.enable'),
          groups: [...(this.#groups?.handlers() ?? []), ...(this.#transactions?.handlers() ?? [])],
          dataPath:
            this.#dataPath?.handlers({
              image: () => this.#loader.image,
              ...(this.#transactions === null
                ? {}
                : { initTransactional: (req) => this.#transactions!.initProducerId(req) }),
            }) ?? [],
          validateOwnChange: (changes) => this.#tlsReload?.validate(changes) ?? null,
        }),
      )
      if (b.sasl) b.registry.register(...saslApiHandlers())
    }
    // Every handler is in place: the controller listener serves the connections held since it was
    // bound at once (Raft and the other controllers need it); the client listeners hold theirs
    // until this broker has caught up with the metadata log (#maybeServe).
    for (const b of this.#listeners) if (b.isController) b.listener.serve()
    if (this.config.broker) this.#logHeld(HELD_LOG_FIRST_MS)
    else this.#serving = true
  }

  /**
   * The client listeners serve once the controller acknowledged that this broker caught up (a
   * heartbeat answered `isCaughtUp`: the metadata it applied reached its own registration record)
   * and the replica manager started from that image, as Kafka's BrokerServer waits for the
   * lifecycle manager's initial catch-up and the first metadata publish before
   * `enableRequestProcessing`. Before, the image may lack topics or name this broker the leader in
   * an epoch its registration took away: clients would be told "unknown topic" or sent to a stale
   * leader. Connections accepted meanwhile are held unread, not refused.
   */
  #maybeServe(): void {
    if (this.#serving || this.#stopping || !this.#caughtUpAcknowledged || !this.#replicasStarted) return
    this.#serving = true
    if (this.#heldLogTimer !== null) this.#clock.clearTimer(this.#heldLogTimer)
    this.#heldLogTimer = null
    this.#log(
      'info',
      `metadata caught up to offset ${this.#loader.image.provenance.offset} (registration at ${this.#brokerEpoch}): serving clients`,
    )
    for (const b of this.#listeners) if (!b.isController) b.listener.serve()
    this.#checkReady()
  }

  /** While the client listeners hold their connections, says in the log what they wait for. */
  #logHeld(delayMs: number): void {
    this.#heldLogTimer = this.#clock.setTimer(delayMs, () => {
      this.#heldLogTimer = null
      if (this.#serving || this.#stopping) return
      const held = this.#listeners
        .filter((b) => !b.isController)
        .reduce((n, b) => n + b.listener.connectionCount, 0)
      const leader = this.#quorum?.status().leaderId ?? null
      const waiting =
        this.#brokerEpoch < 0n
          ? `registration with the controller${leader === null ? ' (no controller quorum leader known: is the quorum reachable?)' : ''}`
          : this.#loader.image.provenance.offset < this.#brokerEpoch
            ? `the metadata to reach offset ${this.#brokerEpoch} (at ${this.#loader.image.provenance.offset})`
            : 'the controller to acknowledge the catch-up'
      this.#log(
        'warn',
        `client listeners hold ${held} connection(s) until this broker catches up: waiting for ${waiting}`,
      )
      this.#logHeld(HELD_LOG_INTERVAL_MS)
    })
  }

  /** Registers this broker with the controller, then heartbeats; unfenced once caught up. */
  async #register(random: Random): Promise<void> {
    const channel = this.#channel!
    // One incarnation per process: a registration again (after STALE_BROKER_EPOCH) is the same
    // process with the same data, which the controller must not treat as a restart.
    this.#incarnationId ??= randomUuid(random)
    const incarnationId = this.#incarnationId
    const listeners = this.#listeners
      .filter((b) => !b.isController)
      .map((b) => {
        const a = this.#advertised(b.spec.name)
        return { name: a.name, host: a.host, port: a.port, securityProtocol: a.securityProtocol }
      })
    while (!this.#stopping) {
      try {
        const res = await channel.registerBroker({
          brokerId: this.config.nodeId,
          clusterId: this.clusterId,
          incarnationId,
          listeners,
          features: SUPPORTED_FEATURES.map((f) => ({
            name: f.name,
            minSupportedVersion: f.minVersion,
            maxSupportedVersion: f.maxVersion,
          })),
          rack: this.config.rack,
          isMigratingZkBroker: false,
          // KIP-858: the data dirs, so the controller knows when a heartbeat reports all of them offline.
          logDirs: this.#logManagers.flatMap((m) => (m.directoryId === null ? [] : [Uuid(m.directoryId)])),
          previousBrokerEpoch: this.#brokerEpoch,
        })
        if (res.errorCode === ErrorCode.None && res.brokerEpoch !== undefined) {
          this.#brokerEpoch = res.brokerEpoch
          this.#log('info', `registered as broker ${this.config.nodeId} with epoch ${res.brokerEpoch}`)
          this.#maybeStartReplicas()
          this.#heartbeat(0)
          return
        }
        this.#log('warn', `broker registration refused: error ${res.errorCode}`)
      } catch (e) {
        // A refused authentication is logged once by the channel, not every retry here.
        if (!isAuthenticationError((e as Error).cause))
          this.#log('warn', `broker registration failed: ${(e as Error).message}`)
      }
      await new Promise<void>((resolve) => this.#clock.setTimer(500, resolve))
    }
  }

  /** The ids of the log dirs that failed and are not back yet (BrokerHeartbeat `OfflineLogDirs`). */
  #offlineLogDirs(): Uuid[] {
    return this.#logManagers.flatMap((m) =>
      m.isOffline && m.directoryId !== null ? [Uuid(m.directoryId)] : [],
    )
  }

  /**
   * The replica manager starts acting on partitions only once this process's metadata has caught up
   * past its own registration record (its broker epoch is that record's offset), as Kafka installs
   * its metadata publishers only after the initial catch-up. Before, the image may still name this
   * broker the leader in an epoch its registration just took away (a new incarnation leaves its
   * ISRs and leaderships): leading there after a power loss rewrote offsets a follower held
   * differently in the same epoch (cluster simulation seeds 5448, 7339).
   */
  #maybeStartReplicas(): void {
    if (this.#replicasStarted || this.#stopping || this.#dataPath === null || this.#brokerEpoch < 0n) return
    if (this.#loader.image.provenance.offset < this.#brokerEpoch) return
    this.#replicasStarted = true
    this.#dataPath.startReplicas(this.#logManagers)
    this.#maybeServe()
  }

  /** The next heartbeat now, unless one is in flight or the broker is not registered (it carries the news then). */
  #heartbeatSoon(): void {
    if (this.#stopping || this.#heartbeatTimer === null) return
    this.#clock.clearTimer(this.#heartbeatTimer)
    this.#heartbeat(0)
  }

  #heartbeat(delayMs: number): void {
    if (this.#stopping) return
    this.#heartbeatTimer = this.#clock.setTimer(delayMs, () => {
      this.#heartbeatTimer = null
      void this.#sendHeartbeat()
    })
  }

  async #sendHeartbeat(): Promise<void> {
    const interval = this.effective.int('broker.heartbeat.interval.ms')
    try {
      const res = await this.#channel!.brokerHeartbeat({
        brokerId: this.config.nodeId,
        brokerEpoch: this.#brokerEpoch,
        currentMetadataOffset: this.#loader.image.provenance.offset,
        wantFence: false,
        wantShutDown: false,
        offlineLogDirs: this.#offlineLogDirs(),
      })
      if (res.errorCode === ErrorCode.StaleBrokerEpoch) {
        this.#log('warn', 'the controller no longer knows this broker epoch: registering again')
        void this.#register(systemRandom)
        return
      }
      if (res.errorCode === ErrorCode.None) {
        if (res.isCaughtUp === true && !this.#caughtUpAcknowledged) {
          this.#caughtUpAcknowledged = true
          this.#maybeServe()
        }
        const fenced = res.isFenced ?? true
        if (fenced !== this.#fenced) this.#log('info', fenced ? 'broker fenced' : 'broker unfenced: serving')
        this.#fenced = fenced
        this.#checkReady()
      }
      // While fenced, heartbeat at once again so that startup does not wait a whole interval.
      this.#heartbeat(this.#fenced ? 50 : interval)
    } catch (e) {
      this.#log('warn', `heartbeat failed: ${(e as Error).message}`)
      this.#heartbeat(interval)
    }
  }

  #isReady(): boolean {
    if (this.config.broker)
      return (
        this.#serving && !this.#fenced && this.#loader.image.brokers.get(this.config.nodeId)?.fenced === false
      )
    return this.#quorum?.status().leaderId !== null
  }

  #checkReady(): void {
    if (!this.#isReady()) return
    for (const w of this.#readyWaiters.splice(0)) w()
  }

  /**
   * Resolves once the node serves: the broker's client listeners serve and it is unfenced (or,
   * controller-only, a leader is known).
   */
  async ready(): Promise<void> {
    if (!this.#isReady()) await new Promise<void>((resolve) => this.#readyWaiters.push(resolve))
    // Unfencing hands the broker its leaderships back: serve once the replicas have taken them.
    await this.#dataPath?.replicas.settled()
  }

  /**
   * Kafka's controlled shutdown, while every listener still serves: heartbeats asking to shut down
   * until the controller answers `shouldShutDown` (it moved this broker's leaderships to live ISR
   * members, took it out of the ISRs and fenced it, and every other active broker has applied
   * that), then until this broker's replicas have applied it too. Meanwhile a client still sending
   * here is answered NOT_LEADER_OR_FOLLOWER naming the new leader (KIP-951), which already leads, a
   * produce waiting for the ISR here is answered as the partition becomes a follower, group members
   * are told NOT_COORDINATOR as their coordinators move with the `__consumer_offsets` partitions,
   * and followers fetching from here switch to the new leaders; had the listeners closed first,
   * each of those would have met a refused or cut connection while this broker still led. The
   * fencing lets a restart re-register without waiting out the old session. Bounded by
   * `timeoutMs`: a controller that does not answer, or other brokers that do not catch up, are not
   * waited for beyond it.
   */
  async #controlledShutdown(timeoutMs: number): Promise<void> {
    if (!this.config.broker || this.#brokerEpoch < 0n || this.#channel === null || timeoutMs <= 0) return
    const channel = this.#channel
    const deadline = this.#clock.monotonicMs() + timeoutMs
    const left = () => deadline - this.#clock.monotonicMs()
    for (let attempt = 0; ; attempt++) {
      const res = await this.#within(
        left(),
        channel.brokerHeartbeat({
          brokerId: this.config.nodeId,
          brokerEpoch: this.#brokerEpoch,
          currentMetadataOffset: this.#loader.image.provenance.offset,
          wantFence: false,
          wantShutDown: true,
          offlineLogDirs: this.#offlineLogDirs(),
        }),
      ).catch((e: unknown) => {
        this.#log('warn', `controlled shutdown failed: ${(e as Error).message}`)
        return 'failed' as const
      })
      if (res === 'failed') return
      if (res === null || left() <= 0) {
        this.#log('warn', `controlled shutdown: not granted within ${timeoutMs} ms, stopping anyway`)
        return
      }
      if (res.errorCode !== ErrorCode.None) {
        this.#log('warn', `controlled shutdown refused: error ${res.errorCode}`)
        return
      }
      if (res.shouldShutDown === true) break
      await this.#sleep(Math.min(left(), attempt === 0 ? 50 : CONTROLLED_SHUTDOWN_POLL_MS))
    }
    // The controller answered once its records were committed; this broker's own replicas answer
    // NOT_LEADER_OR_FOLLOWER with the new leaders only once they have applied them.
    const nodeId = this.config.nodeId
    while (left() > 0 && this.#leadsAny(nodeId)) await this.#sleep(Math.min(left(), 10))
    const settled = await this.#within(left(), this.#dataPath?.replicas.settled() ?? Promise.resolve())
    if (this.#leadsAny(nodeId) || settled === null)
      this.#log('warn', `controlled shutdown: granted, not yet applied here within ${timeoutMs} ms`)
    else this.#log('info', 'controlled shutdown: leaderships moved, broker fenced')
  }

  /** Whether this node's image still names it the leader of a partition or not shutting down. */
  #leadsAny(nodeId: number): boolean {
    const image = this.#loader.image
    if (image.brokers.get(BrokerId(nodeId))?.inControlledShutdown !== true) return true
    for (const t of image.topicsById.values())
      for (const p of t.partitions.values()) if (p.leader === nodeId) return true
    return false
  }

  /** `promise`'s value, or null once `ms` passed first. */
  async #within<T>(ms: number, promise: Promise<T>): Promise<T | null> {
    let timer: ReturnType<Clock['setTimer']> | null = null
    const expired = new Promise<null>((resolve) => {
      timer = this.#clock.setTimer(Math.max(0, ms), () => resolve(null))
    })
    try {
      return await Promise.race([promise, expired])
    } finally {
      if (timer !== null) this.#clock.clearTimer(timer)
    }
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.#clock.setTimer(Math.max(0, ms), resolve))
  }

  /**
   * The replicated write path's counters since the last call (`ReplicationStats`), with how often
   * segment reads found their bytes in the log dirs' write tails; null before the data path exists.
   */
  replicationStats(): Record<string, unknown> | null {
    if (this.#dataPath === null) return null
    const out = this.#dataPath.replicas.stats.take()
    let hits = 0
    let misses = 0
    let missBytes = 0
    for (const m of this.#logManagers) {
      const b = m.tailBudget
      hits += b.hits
      misses += b.misses
      missBytes += b.missBytes
      b.hits = 0
      b.misses = 0
      b.missBytes = 0
    }
    out.tailReads = { hits, misses, missBytes }
    return out
  }

  /**
   * Graceful stop, in Kafka's order: the controlled shutdown first, while the client listeners
   * still answer (leaderships move and clients follow them); then answer long polls, stop
   * accepting, answer what is in flight (up to `graceMs`) and close every connection, idle ones
   * too; write producer snapshots at every log end; close the logs (flushed and marked clean so the
   * next start skips recovery); resign the quorum leadership; close the quorum.
   */
  async stop(graceMs = 5000): Promise<void> {
    if (this.#stopping) return
    this.#stopping = true
    if (this.#heartbeatTimer !== null) this.#clock.clearTimer(this.#heartbeatTimer)
    if (this.#heldLogTimer !== null) this.#clock.clearTimer(this.#heldLogTimer)
    await this.#controlledShutdown(Math.min(graceMs, CONTROLLED_SHUTDOWN_MS_MAX))
    this.#dataPath?.completeDelayed()
    await Promise.all(
      this.#listeners.filter((x) => !x.isController).map((b) => b.listener.stop(graceMs).catch(() => {})),
    )
    this.#channel?.close()
    this.#groups?.close()
    this.#transactions?.close()
    await this.#dataPath?.close()
    for (const m of this.#logManagers) await m.close()
    const quorum = this.#quorum
    if (quorum !== null && quorum.status().role === 'leader' && this.config.voters.length > 1) quorum.resign()
    this.#controller?.close()
    for (const b of this.#listeners.filter((x) => x.isController))
      await b.listener.stop(Math.min(graceMs, 1000)).catch(() => {})
    await quorum?.close()
    await Promise.all(this.#http.map((h) => h.close()))
    this.#console?.close()
    this.#metrics?.close()
  }
}

/** Drops Weir's own keys that the broker catalog does not know before resolving. */
/** The node's authorizer from `authorizer.class.name`, `super.users` and `allow.everyone.if.no.acl.found`. */
function aclPublisher(effective: EffectiveConfig, staticBroker: ConfigLayer): AclPublisher {
  try {
    const configured = authorizerConfigured(effective.string('authorizer.class.name') ?? '')
    const config = authorizerConfig({
      superUsers: staticBroker.get('super.users'),
      allowEveryoneIfNoAclFound: staticBroker.get('allow.everyone.if.no.acl.found'),
    })
    return new AclPublisher(configured, config)
  } catch (e) {
    throw new StartupError(`invalid configuration: ${(e as Error).message}`)
  }
}

function withoutWeirKeys(config: ReadonlyMap<string, string>): Map<string, string> {
  const out = new Map(config)
  out.delete(CLUSTER_ID_KEY)
  return out
}

/**
 * The cluster id from the directories' meta.properties; for new directories, from `cluster.id`, or
 * a fresh one for a single-voter cluster (a dev node formats itself). Every directory must agree.
 */
async function resolveClusterId(
  disk: Disk,
  config: NodeConfig,
  configured: string | undefined,
  random: Random,
): Promise<string> {
  const dirs = [...new Set([config.metadataLogDir, ...(config.broker ? config.logDirs : [])])]
  const found = new Map<string, string>()
  for (const dir of dirs) {
    try {
      const meta = parseMetaProperties(
        (await disk.readFile(joinPath(dir, 'meta.properties'))).toString('utf8'),
      )
      if (meta.nodeId !== config.nodeId) {
        throw new StartupError(`${dir}/meta.properties belongs to node ${meta.nodeId}, not ${config.nodeId}`)
      }
      found.set(dir, meta.clusterId)
    } catch (e) {
      if (!isNotFound(e)) throw e instanceof MetaPropertiesError ? new StartupError(e.message) : e
    }
  }
  const ids = new Set(found.values())
  if (configured !== undefined) ids.add(configured)
  if (ids.size > 1)
    throw new StartupError(`log directories belong to different clusters: ${[...ids].join(', ')}`)
  let clusterId = [...ids][0]
  if (clusterId === undefined) {
    if (config.voters.length > 1) {
      throw new StartupError(
        `the directories are not formatted: set ${CLUSTER_ID_KEY} to the same value on every node of a multi-node cluster`,
      )
    }
    clusterId = Uuid(randomUuid(random))
  }
  for (const dir of dirs) {
    if (found.has(dir)) continue
    await disk.mkdir(dir)
    await writeFileDurably(
      disk,
      joinPath(dir, 'meta.properties'),
      Buffer.from(formatMetaProperties({ version: 1, clusterId, nodeId: config.nodeId })),
    )
  }
  return clusterId
}

/**
 * `max.broker.partitions` when 0: the V8 heap limit over 32 KiB a partition (what a partition may
 * take in memory, with room to work), so that a broker refuses partitions before its heap runs out.
 */
export function brokerPartitionsMaxDefault(heapLimitBytes = getHeapStatistics().heap_size_limit): number {
  return Math.max(1, Math.floor(heapLimitBytes / (32 * 1024)))
}

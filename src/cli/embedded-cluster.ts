/**
 * `startCluster()`: an embedded Weir cluster for tests, in this process. Each node is a WeirNode
 * (broker and controller, all of them voters) on its own free ports with its data in a temporary
 * directory that `stop()` removes. `kill(i)` stops a node abruptly; `restart(i)` starts it again on
 * the same directory and ports.
 *
 * How close `kill(i)` comes to kill -9: the node's disk is frozen at the moment of the kill (every
 * later write, fsync, rename, removal and the clean-shutdown marker are dropped, so the next start
 * recovers the logs as after a crash), its outgoing connections are cut and it makes no new ones
 * (no controlled shutdown, no leadership resignation reaches the others), and its listeners close
 * their sockets at once. What differs from a real kill -9: requests already being handled when the
 * kill lands may still be answered before the sockets close, and writes the node had already handed
 * to the OS stay (as they would after kill -9, which does not lose the page cache either).
 */
import { randomBytes } from 'node:crypto'
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type BootstrapScram, type LogLevel, WeirNode } from '../broker/index.ts'
import { STANDARD_AUTHORIZER_CLASS } from '../config/index.ts'
import {
  type Disk,
  type DiskFile,
  type DiskStat,
  NodeDisk,
  nodeTransport,
  type OpenOptions,
  openFilesMaxDefault,
  type Transport,
  type TransportConnection,
} from '../io/index.ts'
import { makeCertificates } from './certificates.ts'

export interface StartClusterOptions {
  /** Nodes (each broker and controller); default 1. */
  readonly nodes?: number
  /** Broker configs for every node, Kafka's names (`num.partitions`, `log.retention.ms`, ...). */
  readonly config?: Readonly<Record<string, string | number | boolean>>
  /** Where the temporary directory goes; default the OS temp dir. */
  readonly baseDir?: string
  /** Node logs (default: none). */
  readonly log?: (nodeId: number, level: LogLevel, message: string) => void
  /** A SASL_SSL client listener on every node: see `SecurityOptions`. */
  readonly security?: SecurityOptions
}

/**
 * The secured cluster: each node gets a SASL_SSL listener (SCRAM-SHA-512 and PLAIN) with a server
 * certificate for 127.0.0.1 and localhost signed by a CA made for the cluster (the `openssl`
 * command makes them). Brokers' own connections (replication, the controller channel, KRaft) stay
 * on PLAINTEXT listeners on 127.0.0.1, which take no authentication; with the authorizer on, their
 * principal `User:ANONYMOUS` is a super user so that replication is allowed. They stay PLAINTEXT
 * because `kill(i)` cuts the connections made through the node's transport and TLS connections are
 * made by a TLS transport of their own: a killed node would still reach the others over them.
 */
export interface SecurityOptions {
  /** Users by name and password: each can log in with SCRAM-SHA-512 and with PLAIN. */
  readonly users?: Readonly<Record<string, string>>
  /** User names (or `Type:name` principals) allowed everything (`super.users`). */
  readonly superUsers?: readonly string[]
  /** Kafka's StandardAuthorizer (`authorizer.class.name`): requests are checked against ACLs. */
  readonly authorizer?: boolean
}

export type ClientMechanism = 'SCRAM-SHA-512' | 'PLAIN'

/** What a client of the secured cluster needs. */
export interface ClusterSecurity {
  /** host:port of every node's SASL_SSL listener. */
  readonly bootstrap: string[]
  /** The same, comma-separated. */
  readonly bootstrapServers: string
  /** The CA certificate (PEM text) that signed the servers' certificates. */
  readonly caPem: string
  /** The same in a file (removed by stop()). */
  readonly caPath: string
  /**
   * Kafka client properties for a user (Java client, Kafka's tools' `--command-config`, `weir
   * --command-config`): `bootstrap.servers`, `security.protocol`, `sasl.mechanism`,
   * `sasl.jaas.config`, `ssl.truststore.type` PEM and `ssl.truststore.location`.
   */
  clientProperties(user: string, mechanism?: ClientMechanism): Record<string, string>
  /** librdkafka's settings (confluent-kafka, kcat): `sasl.mechanisms`, `sasl.username`, `ssl.ca.location`, ... */
  librdkafkaConfig(user: string, mechanism?: ClientMechanism): Record<string, string>
  /**
   * kafkajs's `new Kafka({...})` options: `brokers`, `ssl: { ca }`, `sasl`. A new object at each call:
   * kafkajs keeps its authenticator (with the password) on the `sasl` object it was given.
   */
  kafkajsConfig(
    user: string,
    mechanism?: ClientMechanism,
  ): {
    brokers: string[]
    ssl: { ca: string[] }
    sasl:
      | { mechanism: 'scram-sha-512'; username: string; password: string }
      | { mechanism: 'plain'; username: string; password: string }
  }
}

export interface EmbeddedNode {
  readonly nodeId: number
  readonly host: string
  /** The PLAINTEXT port (with `security`, the brokers' own, unauthenticated listener). */
  readonly port: number
  /** The SASL_SSL port (with `security`), else null. */
  readonly securePort: number | null
  readonly controllerPort: number
  /** The HTTP listener's port (`/metrics`, `/v1/health/*`: docs/metrics.md); null when `config` turned it off. */
  readonly httpPort: number | null
  readonly dataDir: string
  /** False between kill(i)/stop and restart(i). */
  readonly running: boolean
}

export interface EmbeddedCluster {
  /** host:port of every node, for a client's bootstrap list. */
  readonly bootstrap: string[]
  /** The same, comma-separated (`--bootstrap-server`, `bootstrap.servers`). */
  readonly bootstrapServers: string
  readonly clusterId: string
  /** The nodes by index: node i has node.id i+1. */
  readonly nodes: readonly EmbeddedNode[]
  /** The temporary directory holding every node's data (removed by stop()). */
  readonly dir: string
  /** With `options.security`: the SASL_SSL listeners, the CA and client settings per user. */
  readonly security: ClusterSecurity | null
  /** Stops every node cleanly and removes the temporary directory. */
  stop(): Promise<void>
  /** Stops node i abruptly: see the module comment for how close this is to kill -9. */
  kill(i: number): Promise<void>
  /** Starts node i again (after kill or after stopNode) on its directory and ports. */
  restart(i: number): Promise<void>
  /** Stops node i cleanly (controlled shutdown, logs flushed) without removing its data. */
  stopNode(i: number): Promise<void>
}

/** Ports nobody listens on right now (bound to port 0, then released). */
export async function freePorts(n: number, host = '127.0.0.1'): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
          const s = createServer()
          s.once('error', reject)
          s.listen(0, host, () => resolve(s))
        }),
    ),
  )
  const ports = servers.map((s) => (s.address() as { port: number }).port)
  await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))))
  return ports
}

/** A Kafka-style cluster id (22 characters of URL-safe base64), never starting with '-'. */
function clusterIdFrom(bytes: Buffer): string {
  const id = bytes.toString('base64url')
  return id.startsWith('-') ? `A${id.slice(1)}` : id
}

/** A Disk that can be frozen: after `freeze()` it still reads, but every change is dropped. */
class FreezableDisk implements Disk {
  readonly #disk: Disk
  frozen = false

  constructor(disk: Disk) {
    this.#disk = disk
  }

  async open(path: string, options?: OpenOptions): Promise<DiskFile> {
    if (this.frozen) {
      if (await this.#disk.exists(path)) return new FrozenFile(await this.#disk.open(path), this, true)
      return new FrozenFile(null, this, true, path)
    }
    return new FrozenFile(await this.#disk.open(path, options), this, false)
  }
  readFile(path: string): Promise<Buffer> {
    return this.#disk.readFile(path)
  }
  async rename(from: string, to: string): Promise<void> {
    if (!this.frozen) await this.#disk.rename(from, to)
  }
  async remove(path: string): Promise<void> {
    if (!this.frozen) await this.#disk.remove(path)
  }
  async removeTree(path: string): Promise<void> {
    if (!this.frozen) await this.#disk.removeTree(path)
  }
  list(dir: string): Promise<string[]> {
    return this.#disk.list(dir)
  }
  async mkdir(path: string): Promise<void> {
    if (!this.frozen) await this.#disk.mkdir(path)
  }
  async syncDir(path: string): Promise<void> {
    if (!this.frozen) await this.#disk.syncDir(path)
  }
  exists(path: string): Promise<boolean> {
    return this.#disk.exists(path)
  }
  stat(path: string): Promise<DiskStat> {
    return this.#disk.stat(path)
  }
}

/** A file of a FreezableDisk: once frozen, changes only move its size in memory. */
class FrozenFile implements DiskFile {
  readonly path: string
  readonly #file: DiskFile | null
  readonly #disk: FreezableDisk
  /** The size the node believes the file has, once frozen changes diverged from the real one. */
  #logicalSize: number | null = null
  #frozenAtOpen: boolean

  constructor(file: DiskFile | null, disk: FreezableDisk, frozenAtOpen: boolean, path?: string) {
    this.#file = file
    this.#disk = disk
    this.#frozenAtOpen = frozenAtOpen
    this.path = file?.path ?? path ?? ''
  }
  get #frozen(): boolean {
    return this.#frozenAtOpen || this.#disk.frozen || this.#file === null
  }
  size(): number {
    return this.#logicalSize ?? this.#file?.size() ?? 0
  }
  async read(into: Buffer, position: number, length: number, intoOffset?: number): Promise<number> {
    if (this.#file === null) return 0
    return this.#file.read(into, position, length, intoOffset)
  }
  async append(buffers: readonly Buffer[]): Promise<void> {
    if (!this.#frozen) return this.#file!.append(buffers)
    this.#logicalSize = this.size() + buffers.reduce((n, b) => n + b.length, 0)
  }
  async write(buffers: readonly Buffer[], position: number): Promise<void> {
    if (!this.#frozen) return this.#file!.write(buffers, position)
    this.#logicalSize = Math.max(this.size(), position + buffers.reduce((n, b) => n + b.length, 0))
  }
  async truncate(size: number): Promise<void> {
    if (!this.#frozen) return this.#file!.truncate(size)
    this.#logicalSize = size
  }
  async sync(): Promise<void> {
    if (!this.#frozen) await this.#file!.sync()
  }
  async close(): Promise<void> {
    this.#frozenAtOpen = true
    await this.#file?.close()
  }
}

/** A Transport whose connections can all be cut, refusing new ones after. */
class CuttableTransport implements Transport {
  readonly #transport: Transport
  readonly #open = new Set<TransportConnection>()
  cut = false

  constructor(transport: Transport) {
    this.#transport = transport
  }

  async connect(
    address: { host: string; port: number },
    options: { timeoutMs: number },
  ): Promise<TransportConnection> {
    if (this.cut) throw new Error('connection refused: the node was killed')
    const c = await this.#transport.connect(address, options)
    if (this.cut) {
      c.close()
      throw new Error('connection refused: the node was killed')
    }
    this.#open.add(c)
    c.onClose(() => this.#open.delete(c))
    return c
  }

  cutAll(): void {
    this.cut = true
    for (const c of this.#open) c.close()
    this.#open.clear()
  }
}

interface Slot {
  readonly nodeId: number
  readonly port: number
  readonly securePort: number | null
  readonly controllerPort: number
  readonly httpPort: number
  readonly dataDir: string
  node: WeirNode | null
  disk: FreezableDisk | null
  transport: CuttableTransport | null
}

/**
 * Starts an embedded cluster of `nodes` nodes (default 1) and resolves once every broker serves.
 * Internal topics get replication factor min(3, nodes); `group.initial.rebalance.delay.ms` is 0 (as
 * in Kafka's own test harness) so that a test's consumer group forms at once; broker sessions are
 * 2 s (heartbeats every 500 ms) instead of 9 s, so a killed node is fenced and can restart sooner.
 * `options.config` overrides any of these.
 */
export async function startCluster(options: StartClusterOptions = {}): Promise<EmbeddedCluster> {
  // The free ports are found by binding port 0 and releasing it: another process may take one in
  // between. Then the cluster starts again on new ports (a few times) instead of failing the test.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startClusterOnce(options)
    } catch (e) {
      if (attempt >= 3 || !/EADDRINUSE/.test(`${(e as { code?: string }).code} ${(e as Error).message}`))
        throw e
    }
  }
}

async function startClusterOnce(options: StartClusterOptions): Promise<EmbeddedCluster> {
  const count = options.nodes ?? 1
  if (!Number.isInteger(count) || count < 1)
    throw new RangeError(`nodes must be a positive integer, not ${count}`)
  const dir = mkdtempSync(join(options.baseDir ?? tmpdir(), 'weir-'))
  const host = '127.0.0.1'
  const secured = options.security !== undefined
  const perNode = secured ? 4 : 3
  const ports = await freePorts(perNode * count, host)
  const slots: Slot[] = Array.from({ length: count }, (_, i) => ({
    nodeId: i + 1,
    port: ports[perNode * i]!,
    controllerPort: ports[perNode * i + 1]!,
    httpPort: ports[perNode * i + 2]!,
    securePort: secured ? ports[perNode * i + 3]! : null,
    dataDir: join(dir, `node-${i + 1}`),
    node: null,
    disk: null,
    transport: null,
  }))
  const clusterId = clusterIdFrom(randomBytes(16))
  const voters = slots.map((s) => `${s.nodeId}@${host}:${s.controllerPort}`).join(',')
  const rf = String(Math.min(3, count))
  const base: Record<string, string> = {
    'process.roles': 'broker,controller',
    'controller.listener.names': 'CONTROLLER',
    'controller.quorum.voters': voters,
    'offsets.topic.replication.factor': rf,
    'transaction.state.log.replication.factor': rf,
    'transaction.state.log.min.isr': String(Math.min(2, count)),
    'group.initial.rebalance.delay.ms': '0',
    // A killed node's old broker session must expire before its restart can register again, and a
    // killed node is fenced only then: 2 s instead of Kafka's 9 s keeps kill/restart tests quick.
    'broker.session.timeout.ms': '2000',
    'broker.heartbeat.interval.ms': '500',
  }
  const security =
    options.security === undefined ? null : securitySetup(options.security, join(dir, 'tls'), slots, host)
  if (security !== null) Object.assign(base, security.config)
  for (const [k, v] of Object.entries(options.config ?? {})) base[k] = String(v)
  // On unless the caller chose its own (an empty value turns it off).
  const httpConfigured = Object.hasOwn(options.config ?? {}, 'http.listeners')

  const startNode = async (s: Slot): Promise<void> => {
    const config = new Map(Object.entries(base))
    config.set('node.id', String(s.nodeId))
    config.set(
      'listeners',
      `PLAINTEXT://${host}:${s.port},CONTROLLER://${host}:${s.controllerPort}` +
        (s.securePort === null ? '' : `,SASL_SSL://${host}:${s.securePort}`),
    )
    config.set('log.dirs', s.dataDir)
    config.set('cluster.id', clusterId)
    if (!httpConfigured) config.set('http.listeners', `http://${host}:${s.httpPort}`)
    // The nodes share the process and so its open-file limit.
    const disk = new FreezableDisk(new NodeDisk({ openFilesMax: Math.floor(openFilesMaxDefault() / count) }))
    const transport = new CuttableTransport(nodeTransport)
    const log = options.log
    s.disk = disk
    s.transport = transport
    s.node = await WeirNode.start({
      staticConfig: config,
      disk,
      transport,
      log: log === undefined ? () => {} : (level, message) => log(s.nodeId, level, message),
      bootstrapScram: security?.scram ?? [],
    })
  }
  const slotAt = (i: number): Slot => {
    const s = slots[i]
    if (s === undefined) throw new RangeError(`no node ${i}: the cluster has nodes 0 to ${count - 1}`)
    return s
  }
  let stopped = false
  const cluster: EmbeddedCluster = {
    bootstrap: slots.map((s) => `${host}:${s.port}`),
    bootstrapServers: slots.map((s) => `${host}:${s.port}`).join(','),
    clusterId,
    dir,
    security: security?.client ?? null,
    get nodes() {
      return slots.map((s) => ({
        nodeId: s.nodeId,
        host,
        port: s.port,
        securePort: s.securePort,
        controllerPort: s.controllerPort,
        httpPort: httpConfigured ? null : s.httpPort,
        dataDir: s.dataDir,
        running: s.node !== null,
      }))
    },
    async stop() {
      if (stopped) return
      stopped = true
      await Promise.all(slots.map((s) => cluster.stopNode(s.nodeId - 1).catch(() => {})))
      rmSync(dir, { recursive: true, force: true })
    },
    async kill(i) {
      const s = slotAt(i)
      const node = s.node
      if (node === null) return
      s.node = null
      s.disk!.frozen = true
      s.transport!.cutAll()
      await node.stop(0).catch(() => {})
    },
    async restart(i) {
      const s = slotAt(i)
      if (s.node !== null) throw new Error(`node ${i} is running: kill(${i}) or stopNode(${i}) first`)
      if (stopped) throw new Error('the cluster was stopped')
      await startNode(s)
      await s.node!.ready()
    },
    async stopNode(i) {
      const s = slotAt(i)
      const node = s.node
      if (node === null) return
      s.node = null
      await node.stop()
    },
  }
  try {
    // Every voter must be listening for the quorum to elect a leader: start them together (all
    // settled before a failure is thrown, so that stop() finds every node that did start).
    const started = await Promise.allSettled(slots.map((s) => startNode(s)))
    const failed = started.find((r) => r.status === 'rejected')
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason
    await Promise.all(slots.map((s) => s.node!.ready()))
  } catch (e) {
    await cluster.stop().catch(() => {})
    throw e
  }
  return cluster
}

/** A JAAS option value in double quotes (JaasConfig reads `\\` and `\"` as escapes there). */
function jaasQuoted(value: string): string {
  return `"${value.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`
}

/** The node configs, bootstrap credentials and client settings of `startCluster({ security })`. */
function securitySetup(
  options: SecurityOptions,
  tlsDir: string,
  slots: readonly Slot[],
  host: string,
): { config: Record<string, string>; scram: BootstrapScram[]; client: ClusterSecurity } {
  const users = options.users ?? {}
  for (const name of Object.keys(users))
    if (name === '' || /[\s,=]/.test(name))
      throw new RangeError(`user name '${name}' cannot be empty or hold a space, ',' or '='`)
  mkdirSync(tlsDir, { recursive: true })
  const certs = makeCertificates(tlsDir, randomBytes(12).toString('hex'), [], 'ec')
  const caPem = readFileSync(certs.caPem, 'utf8')
  const principals = (options.superUsers ?? []).map((u) => (u.includes(':') ? u : `User:${u}`))
  // The brokers' own PLAINTEXT connections are User:ANONYMOUS: replication must stay allowed.
  if (options.authorizer === true) principals.push('User:ANONYMOUS')
  const config: Record<string, string> = {
    'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL',
    'inter.broker.listener.name': 'PLAINTEXT',
    'listener.name.sasl_ssl.ssl.keystore.type': 'PEM',
    'listener.name.sasl_ssl.ssl.keystore.location': certs.serverPemStore,
    // What the node's web console trusts when it connects to this listener (ssl.client.auth stays none).
    'listener.name.sasl_ssl.ssl.truststore.type': 'PEM',
    'listener.name.sasl_ssl.ssl.truststore.location': certs.caPem,
    'listener.name.sasl_ssl.sasl.enabled.mechanisms': 'SCRAM-SHA-512,PLAIN',
    'listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config':
      'org.apache.kafka.common.security.scram.ScramLoginModule required;',
    'listener.name.sasl_ssl.plain.sasl.jaas.config': `org.apache.kafka.common.security.plain.PlainLoginModule required${Object.entries(
      users,
    )
      .map(([name, password]) => ` user_${name}=${jaasQuoted(password)}`)
      .join('')};`,
    ...(options.authorizer === true ? { 'authorizer.class.name': STANDARD_AUTHORIZER_CLASS } : {}),
    ...(principals.length > 0 ? { 'super.users': principals.join(';') } : {}),
  }
  const scram: BootstrapScram[] = Object.entries(users).map(([name, password]) => ({
    mechanism: 'SCRAM-SHA-512',
    name,
    iterations: 4096,
    secret: { password },
  }))
  const bootstrap = slots.map((s) => `${host}:${s.securePort}`)
  const passwordOf = (user: string): string => {
    const password = Object.hasOwn(users, user) ? users[user] : undefined
    if (password === undefined) throw new RangeError(`no user '${user}' in security.users`)
    return password
  }
  const client: ClusterSecurity = {
    bootstrap,
    bootstrapServers: bootstrap.join(','),
    caPem,
    caPath: certs.caPem,
    clientProperties(user, mechanism = 'SCRAM-SHA-512') {
      const module =
        mechanism === 'PLAIN'
          ? 'org.apache.kafka.common.security.plain.PlainLoginModule'
          : 'org.apache.kafka.common.security.scram.ScramLoginModule'
      return {
        'bootstrap.servers': bootstrap.join(','),
        'security.protocol': 'SASL_SSL',
        'sasl.mechanism': mechanism,
        'sasl.jaas.config': `${module} required username=${jaasQuoted(user)} password=${jaasQuoted(passwordOf(user))};`,
        'ssl.truststore.type': 'PEM',
        'ssl.truststore.location': certs.caPem,
      }
    },
    librdkafkaConfig(user, mechanism = 'SCRAM-SHA-512') {
      return {
        'bootstrap.servers': bootstrap.join(','),
        'security.protocol': 'SASL_SSL',
        'sasl.mechanisms': mechanism,
        'sasl.username': user,
        'sasl.password': passwordOf(user),
        'ssl.ca.location': certs.caPem,
      }
    },
    kafkajsConfig(user, mechanism = 'SCRAM-SHA-512') {
      return {
        brokers: [...bootstrap],
        ssl: { ca: [caPem] },
        sasl:
          mechanism === 'PLAIN'
            ? { mechanism: 'plain', username: user, password: passwordOf(user) }
            : { mechanism: 'scram-sha-512', username: user, password: passwordOf(user) },
      }
    },
  }
  return { config, scram, client }
}

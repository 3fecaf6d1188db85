/**
 * Cluster control for the fault harness: N real `weir start` processes (each broker and controller),
 * either each in its own network namespace (`netns` mode: partitions are possible) or all on
 * loopback (`loopback` mode: everything but partitions). Every node keeps its partition data in a
 * small tmpfs of its own when `tmpfsBytes` is set, so a full disk is a real ENOSPC; the metadata log
 * lives beside it on the ordinary disk (`metadata.log.dir`), as an operator with a separate
 * metadata disk would have it.
 *
 * With `security: 'SASL_SSL'` the nodes' own connections are secured as an operator would secure
 * them: replica fetchers reach an INTERNAL listener (SASL_SSL, SCRAM-SHA-512 with a user added at
 * format, client certificates required), brokers and controllers the CONTROLLER listener (SASL_SSL,
 * PLAIN), certificates from test/support/tls-certs.ts naming every node's address, SASL sessions of
 * 10 s (`connections.max.reauth.ms`, so connections are retired and reopened under the faults);
 * clients keep the PLAINTEXT listener.
 *
 * Nodes can be killed (SIGKILL) and restarted from their files, paused (SIGSTOP) and resumed
 * (SIGCONT), and have their disk slowed (every node runs with `WEIR_TEST_SLOW_DISK_FILE`, which is 0
 * until a slow-disk fault writes a delay). `destroy()` kills everything, unmounts, removes the namespaces and the directory; it
 * also runs from a process 'exit' handler, so a failing test leaves nothing behind.
 */
import { execFileSync } from 'node:child_process'
import {
  closeSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs'
import { join } from 'node:path'
import { makeTestCerts } from '../../support/tls-certs.ts'
import { freePorts, tempDir, WeirProcess, waitFor, writeProperties } from '../../support/weir-process.ts'
import { NetnsNetwork, netnsAvailable } from './netns.ts'

export type NetworkMode = 'netns' | 'loopback'

export interface FaultClusterOptions {
  readonly nodes: number
  /** 'netns' when the machine allows it (root, `ip netns`), else 'loopback'. */
  readonly network?: NetworkMode | 'auto'
  /** Size of each node's tmpfs data dir in bytes; absent: an ordinary directory (no disk-full fault). */
  readonly tmpfsBytes?: number
  /** Static configs for every node. */
  readonly config?: Readonly<Record<string, string | number>>
  /** Extra environment for every node process. */
  readonly env?: (id: number) => Readonly<Record<string, string>>
  /** The nodes' own connections: PLAINTEXT (default) or SASL_SSL (see above). */
  readonly security?: 'PLAINTEXT' | 'SASL_SSL'
}

/** The SASL_SSL cluster's passwords: what no node may ever print. */
export const INTER_BROKER_PASSWORD = 'ib-scram-pw-4c1d'
export const CONTROLLER_PASSWORD = 'ctl-plain-pw-9e2b'

/** The configs that secure the INTERNAL and CONTROLLER listeners; the passwords can be overridden. */
export function saslSslConfig(
  certs: { caPem: string; serverPemStore: string },
  passwords: { interBroker?: string; controller?: string } = {},
): Record<string, string> {
  const ib = passwords.interBroker ?? INTER_BROKER_PASSWORD
  const ctl = passwords.controller ?? CONTROLLER_PASSWORD
  return {
    'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL,CONTROLLER:SASL_SSL',
    'inter.broker.listener.name': 'INTERNAL',
    'sasl.mechanism.inter.broker.protocol': 'SCRAM-SHA-512',
    'sasl.mechanism.controller.protocol': 'PLAIN',
    'ssl.keystore.type': 'PEM',
    'ssl.keystore.location': certs.serverPemStore,
    'ssl.truststore.type': 'PEM',
    'ssl.truststore.location': certs.caPem,
    'listener.name.internal.ssl.client.auth': 'required',
    'listener.name.internal.sasl.enabled.mechanisms': 'SCRAM-SHA-512',
    'listener.name.internal.scram-sha-512.sasl.jaas.config': `org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="${ib}";`,
    // KIP-368 sessions of 10 s: every node connection is retired and reopened several times a run.
    'connections.max.reauth.ms': '10000',
    'listener.name.controller.sasl.enabled.mechanisms': 'PLAIN',
    'listener.name.controller.plain.sasl.jaas.config': `org.apache.kafka.common.security.plain.PlainLoginModule required username="controller" password="${ctl}" user_controller="${CONTROLLER_PASSWORD}";`,
  }
}

export interface FaultNode {
  readonly id: number
  readonly host: string
  readonly port: number
  readonly controllerPort: number
  readonly process: WeirProcess
  /** Its server.properties. */
  readonly configPath: string
  /** The node's partition data dir (a tmpfs mount when `tmpfsBytes` was set). */
  readonly dataDir: string
  /** Where a disk-full fault puts its filler file. */
  readonly fillerPath: string
  /** The node's slow-disk control file (`WEIR_TEST_SLOW_DISK_FILE`): a delay in ms per write and fsync. */
  readonly slowDiskPath: string
  paused: boolean
}

export class FaultCluster {
  readonly nodes: readonly FaultNode[]
  readonly network: NetworkMode
  readonly net: NetnsNetwork | null
  readonly #dir: { path: string; remove: () => void }
  readonly #mounts: string[]
  #destroyed = false
  readonly #onExit = () => this.#destroySync()

  private constructor(
    nodes: FaultNode[],
    net: NetnsNetwork | null,
    dir: { path: string; remove: () => void },
    mounts: string[],
  ) {
    this.nodes = nodes
    this.net = net
    this.network = net === null ? 'loopback' : 'netns'
    this.#dir = dir
    this.#mounts = mounts
    process.on('exit', this.#onExit)
  }

  static async start(options: FaultClusterOptions): Promise<FaultCluster> {
    const n = options.nodes
    const wanted = options.network ?? 'auto'
    const useNetns = wanted === 'netns' || (wanted === 'auto' && netnsAvailable())
    const dir = tempDir('weir-faults-')
    let net: NetnsNetwork | null = null
    const mounts: string[] = []
    let cluster: FaultCluster | null = null
    try {
      if (useNetns) net = NetnsNetwork.create(n)
      const secured = options.security === 'SASL_SSL'
      // Per node: the client port, the controller port and, secured, the INTERNAL one.
      const per = secured ? 3 : 2
      const ports =
        net === null ? await freePorts(per * n) : Array.from({ length: per * n }, (_, i) => 9092 + (i % per))
      const host = (id: number) => (net === null ? '127.0.0.1' : net.address(id))
      const voters = Array.from(
        { length: n },
        (_, i) => `${i + 1}@${host(i + 1)}:${ports[per * i + 1]}`,
      ).join(',')
      let security: Record<string, string> = {}
      const scram: string[] = []
      if (secured) {
        const certsDir = join(dir.path, 'certs')
        mkdirSync(certsDir)
        const ips = net === null ? [] : Array.from({ length: n }, (_, i) => host(i + 1))
        security = saslSslConfig(makeTestCerts(certsDir, 'store-secret', ips))
        scram.push('--add-scram', `SCRAM-SHA-512=[name=broker,password=${INTER_BROKER_PASSWORD}]`)
      }
      const nodes: FaultNode[] = []
      for (let id = 1; id <= n; id++) {
        const nodeDir = join(dir.path, `node-${id}`)
        const dataDir = join(nodeDir, 'data')
        mkdirSync(dataDir, { recursive: true })
        if (options.tmpfsBytes !== undefined) {
          execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${options.tmpfsBytes}`, 'tmpfs', dataDir])
          mounts.push(dataDir)
        }
        const port = ports[per * (id - 1)]!
        const controllerPort = ports[per * (id - 1) + 1]!
        const internal = secured ? `,INTERNAL://${host(id)}:${ports[per * (id - 1) + 2]}` : ''
        const config = writeProperties(nodeDir, 'server.properties', {
          'node.id': id,
          'process.roles': 'broker,controller',
          listeners: `PLAINTEXT://${host(id)}:${port},CONTROLLER://${host(id)}:${controllerPort}${internal}`,
          'controller.listener.names': 'CONTROLLER',
          'controller.quorum.voters': voters,
          'log.dirs': join(dataDir, 'log'),
          'metadata.log.dir': join(nodeDir, 'metadata'),
          'cluster.id': 'weirFaultsClusterId000',
          'group.initial.rebalance.delay.ms': 0,
          ...security,
          ...options.config,
        })
        nodes.push({
          id,
          host: host(id),
          port,
          controllerPort,
          configPath: config,
          process: new WeirProcess(['--config', config, ...scram], {
            ...(net === null ? {} : { prefix: net.prefix(id) }),
            env: { WEIR_TEST_SLOW_DISK_FILE: join(nodeDir, 'slow-disk-ms'), ...options.env?.(id) },
          }),
          dataDir,
          fillerPath: join(dataDir, 'filler'),
          slowDiskPath: join(nodeDir, 'slow-disk-ms'),
          paused: false,
        })
      }
      cluster = new FaultCluster(nodes, net, dir, mounts)
      await Promise.all(nodes.map((x) => x.process.start(90_000)))
      return cluster
    } catch (e) {
      if (cluster !== null) await cluster.destroy()
      else {
        for (const m of mounts) tryUmount(m)
        net?.destroy()
        dir.remove()
      }
      throw e
    }
  }

  get bootstrap(): string[] {
    return this.nodes.map((n) => `${n.host}:${n.port}`)
  }

  get dir(): string {
    return this.#dir.path
  }

  node(id: number): FaultNode {
    const n = this.nodes.find((x) => x.id === id)
    if (n === undefined) throw new Error(`no node ${id}`)
    return n
  }

  /**
   * Rewrites node `id`'s server.properties with `overrides` (a key set to null is removed); it takes
   * effect at its next start.
   */
  reconfigure(id: number, overrides: Readonly<Record<string, string | null>>): void {
    const path = this.node(id).configPath
    const lines = readFileSync(path, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
    const props = new Map(lines.map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]))
    for (const [k, v] of Object.entries(overrides)) {
      if (v === null) props.delete(k)
      else props.set(k, v)
    }
    writeFileSync(path, `${[...props].map(([k, v]) => `${k}=${v}`).join('\n')}\n`)
  }

  /** kill -9. */
  async kill(id: number): Promise<void> {
    const n = this.node(id)
    n.paused = false
    await n.process.kill()
  }

  /** Restarts a killed or stopped node from its files and waits until it is ready. */
  async restart(id: number): Promise<void> {
    const n = this.node(id)
    if (n.process.running) return
    await n.process.start(120_000)
  }

  pause(id: number): void {
    const n = this.node(id)
    if (n.process.signal('SIGSTOP')) n.paused = true
  }

  resume(id: number): void {
    const n = this.node(id)
    if (n.paused) n.process.signal('SIGCONT')
    n.paused = false
  }

  /** Fills node `id`'s data dir until the file system says ENOSPC (a real full disk). */
  fillDisk(id: number): number {
    const n = this.node(id)
    const fd = openSync(n.fillerPath, 'a')
    const chunk = Buffer.alloc(1 << 20)
    let written = 0
    try {
      for (;;) {
        try {
          written += writeSync(fd, chunk)
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code === 'ENOSPC') break
          throw e
        }
      }
      // The last partial megabyte: fill to the last byte.
      for (let size = 1 << 19; size >= 512; size >>= 1) {
        try {
          written += writeSync(fd, chunk, 0, size)
        } catch {
          // full at this granularity
        }
      }
    } finally {
      closeSync(fd)
    }
    return written
  }

  /** Frees what `fillDisk` took. */
  freeDisk(id: number): void {
    try {
      unlinkSync(this.node(id).fillerPath)
    } catch {
      // not filled
    }
  }

  /**
   * Slows node `id`'s disk: every write and fsync waits `ms` first (Weir's test-only SlowDisk on its
   * Disk port; the machine has no dm-delay). 0 heals. Takes effect within 200 ms, no restart.
   */
  slowDisk(id: number, ms: number): void {
    writeFileSync(this.node(id).slowDiskPath, `${ms}\n`)
  }

  /** Heals every fault: resumes paused nodes, restarts dead ones, frees disks, heals the network. */
  async healAll(): Promise<void> {
    this.net?.heal()
    for (const n of this.nodes) {
      this.resume(n.id)
      this.freeDisk(n.id)
      this.slowDisk(n.id, 0)
    }
    for (const n of this.nodes) if (!n.process.running) await this.restart(n.id)
  }

  /** SIGTERM every node (one at a time, so the last ones keep a quorum); exit codes. */
  async stopAll(): Promise<Array<number | null>> {
    const codes: Array<number | null> = []
    for (const n of this.nodes) {
      this.resume(n.id)
      codes.push(await n.process.stop())
    }
    return codes
  }

  /** Kills every node, unmounts, removes namespaces and files (idempotent). */
  async destroy(): Promise<void> {
    if (this.#destroyed) return
    for (const n of this.nodes) {
      this.resume(n.id)
      await n.process.kill()
    }
    this.#destroySync()
  }

  #destroySync(): void {
    if (this.#destroyed) return
    this.#destroyed = true
    process.off('exit', this.#onExit)
    for (const n of this.nodes) {
      n.process.signal('SIGCONT')
      n.process.killNow()
    }
    for (const m of this.#mounts) tryUmount(m)
    this.net?.destroy()
    this.#dir.remove()
  }

  /** Waits until `fn` returns a value; a re-export for harness users. */
  static waitFor = waitFor
}

function tryUmount(path: string): void {
  try {
    execFileSync('umount', ['-l', path], { stdio: 'ignore' })
  } catch {
    // not mounted
  }
  try {
    rmSync(path, { recursive: true, force: true })
  } catch {
    // gone
  }
}

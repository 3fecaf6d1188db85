/**
 * A cluster of N real Weir processes on loopback for compat and fault tests: every node is broker
 * and controller (combined) unless `controllers` makes the last ones brokers only; all share one
 * cluster id and listen on free ports. Start them all,
 * stop or kill one, restart it from its files, stop them all.
 *
 *   const cluster = await WeirCluster.start({ nodes: 3 })
 *   cluster.bootstrap              // "127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3"
 *   await cluster.node(2).kill()   // node ids are 1..N
 *   await cluster.node(2).start()
 *   await cluster.stop()           // SIGTERM every running node, then removes the directory
 */
import { freePorts, tempDir, WeirProcess, writeProperties } from './weir-process.ts'

export interface ClusterOptions {
  /** How many nodes (ids 1..nodes). Default 3. */
  readonly nodes?: number
  /**
   * How many of them are controllers (voters, ids 1..controllers, combined broker and controller);
   * the others are brokers only. Default all.
   */
  readonly controllers?: number
  /** Static configs every node gets (e.g. `offsets.topic.replication.factor`). */
  readonly config?: Readonly<Record<string, string | number>>
  /** Static configs of one node by id (e.g. `broker.rack`). */
  readonly nodeConfig?: (id: number) => Readonly<Record<string, string | number>>
  /** The cluster id every node formats with. Default a fixed test id. */
  readonly clusterId?: string
  /** Directory prefix under the OS temp dir. */
  readonly prefix?: string
}

export interface ClusterNode {
  readonly id: number
  /** The client (PLAINTEXT) port. */
  readonly port: number
  /** The CONTROLLER listener port (unused by a broker-only node). */
  readonly controllerPort: number
  readonly process: WeirProcess
  /** "127.0.0.1:port" of the client listener. */
  readonly address: string
}

export class WeirCluster {
  readonly nodes: readonly ClusterNode[]
  readonly clusterId: string
  readonly #dir: { path: string; remove: () => void }

  private constructor(nodes: ClusterNode[], clusterId: string, dir: { path: string; remove: () => void }) {
    this.nodes = nodes
    this.clusterId = clusterId
    this.#dir = dir
  }

  /** Writes each node's properties and starts every node (in parallel), waiting until all are ready. */
  static async start(options: ClusterOptions = {}): Promise<WeirCluster> {
    const cluster = await WeirCluster.create(options)
    try {
      await Promise.all(cluster.nodes.map((n) => n.process.start(60_000)))
    } catch (e) {
      await cluster.kill()
      throw e
    }
    return cluster
  }

  /** The nodes configured but not started (start them with `node(id).process.start()`). */
  static async create(options: ClusterOptions = {}): Promise<WeirCluster> {
    const n = options.nodes ?? 3
    const clusterId = options.clusterId ?? 'weirTestClusterId00000'
    const ports = await freePorts(2 * n)
    const dir = tempDir(options.prefix ?? 'weir-cluster-')
    return new WeirCluster(WeirCluster.#plan(n, ports, dir.path, clusterId, options), clusterId, dir)
  }

  static #plan(
    n: number,
    ports: readonly number[],
    dir: string,
    clusterId: string,
    options: ClusterOptions,
  ): ClusterNode[] {
    const controllers = Math.min(n, options.controllers ?? n)
    const voters = Array.from(
      { length: controllers },
      (_, i) => `${i + 1}@127.0.0.1:${ports[2 * i + 1]}`,
    ).join(',')
    return Array.from({ length: n }, (_, i) => {
      const id = i + 1
      const port = ports[2 * i]!
      const controllerPort = ports[2 * i + 1]!
      const config = writeProperties(dir, `node-${id}.properties`, {
        'node.id': id,
        'process.roles': id <= controllers ? 'broker,controller' : 'broker',
        listeners:
          id <= controllers
            ? `PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`
            : `PLAINTEXT://127.0.0.1:${port}`,
        'controller.listener.names': 'CONTROLLER',
        'controller.quorum.voters': voters,
        'log.dirs': `${dir}/node-${id}`,
        'cluster.id': clusterId,
        ...options.config,
        ...options.nodeConfig?.(id),
      })
      return {
        id,
        port,
        controllerPort,
        process: new WeirProcess(['--config', config]),
        address: `127.0.0.1:${port}`,
      }
    })
  }

  /** Every node's client address, comma-separated (a bootstrap list). */
  get bootstrap(): string {
    return this.nodes.map((n) => n.address).join(',')
  }

  /** The directory the nodes' properties and log dirs are in. */
  get dir(): string {
    return this.#dir.path
  }

  node(id: number): ClusterNode {
    const n = this.nodes.find((x) => x.id === id)
    if (n === undefined) throw new Error(`no node ${id}`)
    return n
  }

  /** The last `chars` each node printed, headed by its id: what a failing test shows. */
  outputTail(chars = 4000): string {
    return this.nodes.map((n) => `--- node ${n.id}\n${n.process.output.slice(-chars)}`).join('\n')
  }

  /** SIGTERM every node (clean shutdown), then removes the directory; returns the exit codes. */
  async stop(): Promise<Array<number | null>> {
    const codes: Array<number | null> = []
    // One at a time: the last voters keep a quorum while the others shut down cleanly.
    for (const n of this.nodes) codes.push(await n.process.stop())
    this.#dir.remove()
    return codes
  }

  /** SIGKILL every node, then removes the directory (for `after` hooks after a failure). */
  async kill(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.process.kill()))
    this.#dir.remove()
  }
}

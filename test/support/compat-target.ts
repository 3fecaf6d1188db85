/**
 * The Weir a compat test runs against: one `weir start` process, or, with `WEIR_COMPAT_NODES=3`
 * (`npm run test:compat:cluster`), a cluster of that many real processes (test/support/cluster.ts)
 * with `default.replication.factor`, `offsets.topic.replication.factor` and
 * `transaction.state.log.replication.factor` = the node count and `min.insync.replicas` 2, and a
 * bootstrap list naming every broker. The same test files run either way:
 *
 *   const weir = new CompatTarget('weir-kcat-', { 'group.initial.rebalance.delay.ms': 300 })
 *   await weir.start()          // every node ready, every broker registered
 *   weir.bootstrap              // "127.0.0.1:p1[,127.0.0.1:p2,...]"
 *   await weir.restart()        // clean stop of every node (exit 0), start on the same files/ports
 *   await weir.close()          // kill -9 whatever runs, remove the directory
 *
 * With `WEIR_COMPAT_TARGET=kafka` the same file runs against one Apache Kafka 4.0.0 KRaft node
 * (tools/kafka/kafka.ts) with the same settings and one replica of every internal topic instead, to
 * prove a test on the reference broker first (`start`, `bootstrap` and `close` only).
 */
import assert from 'node:assert/strict'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { apis } from '../../src/protocol/index.ts'
import { type KafkaBroker, startKafka } from '../../tools/kafka/kafka.ts'
import { WeirCluster } from './cluster.ts'
import { openConnection } from './connection.ts'
import { freePorts, tempDir, WeirProcess, waitFor } from './weir-process.ts'

/** How many nodes the compat tests run against (`WEIR_COMPAT_NODES`, default 1). */
export const COMPAT_NODES = Math.max(1, Number(process.env.WEIR_COMPAT_NODES ?? '1') || 1)
/** `kafka`: the compat tests run against Apache Kafka (`WEIR_COMPAT_TARGET`, default `weir`). */
export const COMPAT_TARGET = process.env.WEIR_COMPAT_TARGET === 'kafka' ? 'kafka' : 'weir'
/** The Kafka version of the `kafka` target. */
export const COMPAT_KAFKA_VERSION = '4.0.0'
/** True when the compat tests run against a replicated cluster. */
export const CLUSTERED = COMPAT_NODES > 1

/** A client port whose neighbour (the controller listener: `--listen` uses port + 1) is free too. */
export async function freePortPair(): Promise<number> {
  for (;;) {
    const [port] = await freePorts(1)
    const ok = await new Promise<boolean>((resolve) => {
      const s = createServer()
      s.once('error', () => resolve(false))
      s.listen(port! + 1, '127.0.0.1', () => s.close(() => resolve(true)))
    })
    if (ok) return port!
  }
}

/** The replication settings of the clustered compat pass. */
export function clusterSettings(nodes: number): Record<string, number> {
  return {
    'default.replication.factor': nodes,
    'offsets.topic.replication.factor': nodes,
    'transaction.state.log.replication.factor': nodes,
    'min.insync.replicas': Math.min(2, nodes),
    'transaction.state.log.min.isr': Math.min(2, nodes),
  }
}

export class CompatTarget {
  readonly nodes = COMPAT_NODES
  readonly #prefix: string
  readonly #settings: Readonly<Record<string, string | number>>
  #single: { dir: { path: string; remove: () => void }; port: number; process: WeirProcess | null } | null =
    null
  #cluster: WeirCluster | null = null
  #kafka: { dir: { path: string; remove: () => void }; broker: KafkaBroker } | null = null

  /** `settings`: config keys every node gets (as `--set`). Nothing starts until `start()`. */
  constructor(prefix: string, settings: Readonly<Record<string, string | number>> = {}) {
    this.#prefix = prefix
    this.#settings = settings
  }

  get clustered(): boolean {
    return this.nodes > 1
  }

  /** Every broker's "127.0.0.1:port", comma-separated. */
  get bootstrap(): string {
    return this.addresses.join(',')
  }

  /** Every broker's "127.0.0.1:port". */
  get addresses(): string[] {
    if (this.#kafka !== null) return [this.#kafka.broker.bootstrap]
    if (this.#cluster !== null) return this.#cluster.nodes.map((n) => n.address)
    assert.ok(this.#single !== null && this.#single.port !== 0, 'not started')
    return [`127.0.0.1:${this.#single.port}`]
  }

  /** The first broker's client port. */
  get port(): number {
    return Number(this.addresses[0]!.split(':')[1])
  }

  /** The underlying processes (one, or one per node). */
  get processes(): WeirProcess[] {
    if (this.#cluster !== null) return this.#cluster.nodes.map((n) => n.process)
    return this.#single?.process === null || this.#single === null ? [] : [this.#single.process]
  }

  /** The cluster (clustered only). */
  get cluster(): WeirCluster | null {
    return this.#cluster
  }

  /** Starts (or starts again, after `stop()`) every node and waits until every broker registered. */
  async start(): Promise<void> {
    if (COMPAT_TARGET === 'kafka') {
      assert.ok(!this.clustered && this.#kafka === null, 'the kafka target is one node, started once')
      const dir = tempDir(`${this.#prefix}kafka-`)
      const broker = await startKafka({
        port: 0,
        dataDir: dir.path,
        version: COMPAT_KAFKA_VERSION,
        quiet: true,
        config: Object.fromEntries(Object.entries(this.#settings).map(([k, v]) => [k, String(v)])),
      })
      this.#kafka = { dir, broker }
      return
    }
    if (!this.clustered) {
      if (this.#single === null) this.#single = { dir: tempDir(this.#prefix), port: 0, process: null }
      const s = this.#single
      if (s.port === 0) s.port = await freePortPair()
      s.process = new WeirProcess([
        '--data-dir',
        join(s.dir.path, 'data'),
        '--listen',
        `127.0.0.1:${s.port}`,
        ...Object.entries(this.#settings).flatMap(([k, v]) => ['--set', `${k}=${v}`]),
      ])
      await s.process.start()
      return
    }
    if (this.#cluster === null) {
      this.#cluster = await WeirCluster.create({
        nodes: this.nodes,
        prefix: this.#prefix,
        config: {
          ...this.#settings,
          ...clusterSettings(this.nodes),
          // Kafka's defaults, whatever a test sets for one node (a short session there lets a
          // restarted node re-register sooner): a node restarted here is a new incarnation, which
          // the controller takes at once, and a 1.2 s session on this busy machine fences brokers
          // that merely missed a few heartbeats, moving leaders and coordinators under the clients.
          'broker.heartbeat.interval.ms': 2000,
          'broker.session.timeout.ms': 9000,
        },
      })
    }
    const cluster = this.#cluster
    await Promise.all(cluster.nodes.map((n) => (n.process.running ? undefined : n.process.start(60_000))))
    await this.waitSettled()
  }

  /**
   * Clustered: waits until Metadata from every node lists every broker and every partition of every
   * topic has a leader and at least `min.insync.replicas` in sync, so that a test's first request
   * after a (re)start meets the cluster as a single node's test meets its node.
   */
  async waitSettled(timeoutMs = 60_000): Promise<void> {
    if (!this.clustered) return
    const isrMin = Math.min(2, this.nodes)
    for (const address of this.addresses) {
      const [host, port] = address.split(':')
      await waitFor(
        `${address}: every broker and every partition's leader`,
        async () => {
          const c = await openConnection({ host: host!, port: Number(port) }, 'weir-compat-target', 5_000)
          try {
            const m = await c.request(apis.Metadata, 12, {
              topics: null,
              allowAutoTopicCreation: false,
              includeTopicAuthorizedOperations: false,
            })
            if (m.brokers.length < this.nodes) return undefined
            for (const t of m.topics) {
              for (const p of t.partitions) {
                if (p.errorCode !== 0 || p.leaderId < 0 || p.isrNodes.length < isrMin) return undefined
              }
            }
            return true
          } finally {
            c.close()
          }
        },
        timeoutMs,
      )
    }
  }

  /** SIGTERM every node, one at a time; resolves to 0 when every one exited cleanly. */
  async stop(): Promise<number | null> {
    let code: number | null = 0
    for (const p of this.processes) {
      const c = await p.stop()
      if (c !== 0) code = c
    }
    return code
  }

  /**
   * A clean restart on the same data and ports. One node: SIGTERM (exit 0) and start. A cluster:
   * a rolling restart, one node at a time (SIGTERM, exit 0, start, every partition led and in sync
   * again), as a cluster is restarted in service. (Stopping every node and starting them all at once
   * can leave a restarted resigned quorum leader stuck as a prospective that never follows the new
   * leader: not what these client tests are about, see docs/compatibility.md.)
   */
  async restart(): Promise<void> {
    if (this.#cluster === null) {
      assert.equal(await this.stop(), 0, 'a clean exit')
      await this.start()
      return
    }
    for (const n of this.#cluster.nodes) {
      assert.equal(await n.process.stop(), 0, `node ${n.id}: a clean exit`)
      await n.process.start(60_000)
      await this.waitSettled()
    }
  }

  /**
   * A crash and a start on the same data: kill -9 and start. A cluster: each node in turn (kill -9,
   * start, every partition led and in sync again), so that every node's crash is survived.
   */
  async crash(): Promise<void> {
    if (this.#cluster === null) {
      await this.kill()
      await this.start()
      return
    }
    for (const n of this.#cluster.nodes) {
      await n.process.kill()
      await n.process.start(60_000)
      await this.waitSettled()
    }
  }

  /** SIGKILL every node. */
  async kill(): Promise<void> {
    await Promise.all(this.processes.map((p) => p.kill()))
  }

  /** SIGKILL whatever runs and remove the data. */
  async close(): Promise<void> {
    if (this.#kafka !== null) {
      await this.#kafka.broker.stop()
      this.#kafka.dir.remove()
    }
    if (this.#cluster !== null) await this.#cluster.kill()
    if (this.#single !== null) {
      await this.#single.process?.kill()
      this.#single.dir.remove()
    }
  }
}

/**
 * The brokers of a kill -9 scenario with real clients: three Weir nodes (RF 3,
 * min.insync.replicas 2; `kill` and `restart` act on node 2), or, with `WEIR_COMPAT_TARGET=kafka`,
 * one Apache Kafka 4.0.0 node (RF 1; `kill` is its kill -9, and it takes nothing until `restart`),
 * to prove a scenario on the reference broker first.
 *
 *   const brokers = await startBrokers('weir-copier-')
 *   brokers.bootstrap; brokers.replicas   // the replication factor to create topics with
 *   await brokers.kill(); await brokers.restart(); await brokers.close()
 */
import { startKafka } from '../../../tools/kafka/kafka.ts'
import { WeirCluster } from '../../support/cluster.ts'
import { COMPAT_TARGET, clusterSettings, freePortPair } from '../../support/compat-target.ts'
import { tempDir } from '../../support/weir-process.ts'

/** The brokers under test: three Weir nodes, or one Kafka node. */
export interface Brokers {
  readonly bootstrap: string
  readonly replicas: number
  kill(): Promise<void>
  restart(): Promise<void>
  close(): Promise<void>
  tail(): string
}

const brokerSettings = {
  'group.initial.rebalance.delay.ms': 0,
  // The coordinator looks for transactions past their timeout this often (Kafka's default 10 s).
  'transaction.abort.timed.out.transaction.cleanup.interval.ms': 1000,
}

async function weirBrokers(prefix: string): Promise<Brokers> {
  const cluster = await WeirCluster.start({
    nodes: 3,
    prefix,
    config: {
      ...clusterSettings(3),
      ...brokerSettings,
      'offsets.topic.num.partitions': 3,
      'transaction.state.log.num.partitions': 3,
    },
  })
  const victim = cluster.node(2).process
  return {
    bootstrap: cluster.bootstrap,
    replicas: 3,
    kill: () => victim.kill(),
    restart: () => victim.start(60_000),
    close: () => cluster.kill(),
    tail: () => cluster.outputTail(3000),
  }
}

async function kafkaBrokers(prefix: string): Promise<Brokers> {
  const dir = tempDir(`${prefix}kafka-`)
  const port = await freePortPair()
  const options = {
    port,
    controllerPort: port + 1,
    dataDir: dir.path,
    quiet: true,
    config: Object.fromEntries(Object.entries(brokerSettings).map(([k, v]) => [k, String(v)])),
  }
  let broker = await startKafka(options)
  return {
    bootstrap: broker.bootstrap,
    replicas: 1,
    kill: async () => {
      process.kill(broker.pid!, 'SIGKILL')
      await broker.stop(0)
    },
    restart: async () => {
      broker = await startKafka({ ...options, fresh: false })
    },
    close: async () => {
      await broker.stop(0)
      dir.remove()
    },
    tail: () => `see ${broker.logFile}`,
  }
}

/** Starts the brokers of `COMPAT_TARGET`. */
export function startBrokers(prefix: string): Promise<Brokers> {
  return COMPAT_TARGET === 'kafka' ? kafkaBrokers(prefix) : weirBrokers(prefix)
}

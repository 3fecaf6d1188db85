/**
 * A rolling restart of three combined nodes under two Java producers (test/support/rolling-restart.ts:
 * one with retries=0, acks=all and no idempotence, one with KafkaProducer's defaults, each sending
 * a record every INTERVAL_MS to every partition in turn of a topic with RF 3 and
 * min.insync.replicas 2), against Weir (three `weir start` processes) and against Apache Kafka
 * (three KRaft JVMs from tools/kafka, the version of tools/kafka/version.sh); each node in turn
 * SIGTERMed, started again and waited for until it is back in every ISR. Prints per target the
 * failed sends by exception, acknowledged records lost, duplicates and the longest wait for an
 * acknowledgement, then one JSON line per target. Never fails on a count. *
 *   npm run bench:rolling-restart                     # Weir, then Kafka
 *   TARGETS=kafka ROUNDS=3 node bench/rolling-restart.ts
 *   INTERVAL_MS=0 node bench/rolling-restart.ts        # no pause between sends
 *   STOP=kill node bench/rolling-restart.ts            # kill -9 each node instead of SIGTERM
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { WeirCluster } from '../test/support/cluster.ts'
import { type RollingResult, type RollingTarget, rollingRestart } from '../test/support/rolling-restart.ts'
import { freePorts } from '../tools/free-ports.ts'
import { type KafkaBroker, kafkaVersion, randomClusterId, startKafka } from '../tools/kafka/kafka.ts'

const TARGETS = (process.env.TARGETS ?? 'weir,kafka').split(',').filter((t) => t !== '')
const ROUNDS = Number(process.env.ROUNDS ?? 1)
const INTERVAL_MS = Number(process.env.INTERVAL_MS ?? 1)
/** `term` (a clean stop, the default) or `kill` (kill -9: failover from the ISR). */
const KILL = process.env.STOP === 'kill'
const options = {
  rounds: ROUNDS,
  intervalMs: INTERVAL_MS,
  log: (line: string) => console.log(line),
}

async function weir(): Promise<RollingResult> {
  const cluster = await WeirCluster.start({ nodes: 3, prefix: 'weir-bench-rolling-' })
  try {
    return await rollingRestart(
      {
        name: 'weir',
        bootstrap: cluster.bootstrap,
        nodes: cluster.nodes.map((n) => ({
          id: n.id,
          port: n.port,
          stop: async () => {
            if (KILL) await n.process.kill()
            else await n.process.stop()
          },
          start: () => n.process.start(60_000),
        })),
      },
      options,
    )
  } finally {
    await cluster.kill()
  }
}

/** Three combined Kafka nodes (node ids 1-3, a static quorum of all three) on loopback. */
async function kafka(): Promise<RollingResult> {
  const dir = mkdtempSync(join(tmpdir(), 'kafka-bench-rolling-'))
  const ports = await freePorts(6)
  const clusterId = randomClusterId()
  const voters = [1, 2, 3].map((id) => `${id}@127.0.0.1:${ports[2 * id - 1]}`).join(',')
  const start = (id: number, fresh: boolean) =>
    startKafka({
      port: ports[2 * id - 2]!,
      controllerPort: ports[2 * id - 1]!,
      dataDir: join(dir, `node-${id}`),
      clusterId,
      fresh,
      quiet: true,
      heapMb: 384,
      config: {
        'node.id': String(id),
        'controller.quorum.voters': voters,
        'offsets.topic.replication.factor': '3',
        'transaction.state.log.replication.factor': '3',
        'share.coordinator.state.topic.replication.factor': '3',
      },
    })
  const brokers = new Map<number, KafkaBroker>()
  try {
    // The three voters must start together to elect a quorum leader.
    const settled = await Promise.allSettled([1, 2, 3].map((id) => start(id, true)))
    for (const [i, r] of settled.entries()) if (r.status === 'fulfilled') brokers.set(i + 1, r.value)
    const failed = settled.find((r) => r.status === 'rejected')
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason
    const started = [...brokers.values()]
    const target: RollingTarget = {
      name: `kafka ${kafkaVersion()}`,
      bootstrap: started.map((b) => b.bootstrap).join(','),
      nodes: [1, 2, 3].map((id) => ({
        id,
        port: ports[2 * id - 2]!,
        stop: async () => {
          const b = brokers.get(id)!
          if (KILL && b.pid !== undefined) process.kill(b.pid, 'SIGKILL')
          await b.stop()
        },
        start: async () => {
          brokers.set(id, await start(id, false))
        },
      })),
    }
    return await rollingRestart(target, options)
  } finally {
    await Promise.all([...brokers.values()].map((b) => b.stop(1000)))
    rmSync(dir, { recursive: true, force: true })
  }
}

const results: Array<{ target: string; result: RollingResult }> = []
for (const t of TARGETS) {
  const result = t === 'kafka' ? await kafka() : await weir()
  results.push({ target: t === 'kafka' ? `kafka ${kafkaVersion()}` : 'weir', result })
}
const gap = (r: RollingResult['default']) => Math.max(0, ...Object.values(r.ackGapMsMax))
console.log(
  `\nrolling ${KILL ? 'kill -9' : 'restart'}, 3 nodes, ${ROUNDS} round(s), a send every ${INTERVAL_MS} ms per producer:`,
)
for (const { target, result } of results) {
  const { noretry: n, default: d } = result
  console.log(
    `${target.padEnd(12)} retries=0: sent ${n.sent}, failed ${n.failed} ${JSON.stringify(n.errors)}, lost ${n.lost}, ` +
      `longest without an ack ${gap(n)} ms; defaults: sent ${d.sent}, failed ${d.failed}, lost ${d.lost}, ` +
      `duplicates ${d.duplicates}, longest without an ack ${gap(d)} ms`,
  )
}
for (const { target, result } of results)
  console.log(JSON.stringify({ target, ...result, timeline: undefined }))

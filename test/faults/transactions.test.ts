/**
 * Transactions under faults: three real Weir nodes (network namespaces where the machine allows),
 * a topic with RF 3 and min.insync.replicas 2, kafkajs transactional producers committing and
 * aborting transactions over its partitions while a seeded schedule kills (-9) and pauses nodes,
 * partition leaders and the controller, and cuts the network. After healing, a fresh read_committed
 * kafkajs consumer reads everything: no aborted read, no torn transaction, no lost committed
 * transaction, no duplicate, each producer's transactions in order (harness/txn-workload.ts).
 */
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { FaultCluster } from './harness/cluster.ts'
import { FaultInjector, faultKindsFor, planSchedule } from './harness/faults.ts'
import {
  checkTransactions,
  dumpTransactionalLog,
  readCommitted,
  TxnWorkload,
} from './harness/txn-workload.ts'
import { createTopic } from './harness/workload.ts'

for (const seed of [1]) {
  test(`transactions under seeded faults (seed ${seed}): read_committed sees committed transactions whole, aborted ones never`, {
    timeout: 300_000,
  }, async () => {
    const lines: string[] = []
    const log = (line: string) => lines.push(line)
    const topic = 'faults-txn'
    const cluster = await FaultCluster.start({
      nodes: 3,
      network: 'auto',
      config: {
        'offsets.topic.replication.factor': 3,
        'offsets.topic.num.partitions': 6,
        'transaction.state.log.replication.factor': 3,
        'transaction.state.log.min.isr': 2,
        'transaction.state.log.num.partitions': 6,
        'transaction.abort.timed.out.transaction.cleanup.interval.ms': 1000,
        'min.insync.replicas': 2,
      },
    })
    let workload: TxnWorkload | null = null
    try {
      await createTopic({
        brokers: cluster.bootstrap,
        topic,
        partitions: 4,
        replicationFactor: 3,
        insyncReplicasMin: 2,
        seed,
        groupId: 'unused',
      })
      const possible = faultKindsFor(cluster, false)
      const kinds = (['kill', 'pause', 'kill-leader', 'kill-controller', 'isolate-leader'] as const).filter(
        (k) => possible.includes(k),
      )
      const schedule = planSchedule(seed, 30_000, kinds, { gapMs: [2_000, 4_000], holdMs: [3_000, 6_000] })
      workload = new TxnWorkload({
        brokers: cluster.bootstrap,
        topic,
        partitions: 4,
        producers: 3,
        seed,
        log,
      })
      const started = Date.now()
      workload.start()
      const injector = new FaultInjector(cluster, topic, log)
      try {
        await injector.run(schedule, () => Date.now() - started)
        await new Promise((r) => setTimeout(r, 3_000))
      } finally {
        await cluster.healAll()
      }
      await workload.stop()
      // Transactions left open by a fault are aborted by their coordinator after the producers'
      // transaction.timeout.ms (10 s), checked every second: read once they have ended.
      await new Promise((r) => setTimeout(r, 12_000))
      const read = await readCommitted(cluster.bootstrap, topic, 5_000, 120_000)
      const v = checkTransactions(workload.transactions, read)
      console.log(
        `${lines.slice(-40).join('\n')}\nfaults: ${injector.injected.length}; transactions: ${v.committed} committed, ${v.aborted} aborted, ${v.unknown} unknown`,
      )
      const problems =
        v.abortedReads.length + v.torn.length + v.lost.length + v.duplicates.length + v.reordered.length
      if (problems > 0) {
        await cluster.stopAll()
        const dump = cluster.nodes
          .map((n) => `# node ${n.id}\n${dumpTransactionalLog(join(n.dataDir, 'log'), topic)}`)
          .join('\n')
        const file = join(tmpdir(), `weir-faults-txn-${seed}.txt`)
        writeFileSync(
          file,
          `${dump}\n# transactions\n${workload.transactions.map((t) => `${t.id} ${t.outcome} ${t.values.map((x) => `${x.partition}:${x.value}`).join(' ')}`).join('\n')}\n`,
        )
        console.log(`segments and transactions written to ${file}`)
      }
      assert.ok(injector.injected.length >= 3, `faults injected: ${injector.injected.length}`)
      assert.ok(v.committed > 0, 'transactions were committed')
      assert.ok(v.aborted > 0, 'transactions were aborted')
      assert.deepEqual(v.abortedReads, [], 'no aborted read')
      assert.deepEqual(v.torn, [], 'no torn transaction')
      assert.deepEqual(v.lost, [], 'no lost committed transaction')
      assert.deepEqual(v.duplicates, [], 'no duplicate')
      assert.deepEqual(v.unexpected, [], 'nothing read that was not sent')
      assert.deepEqual(v.reordered, [], "each producer's transactions in order")
    } finally {
      await workload?.stop().catch(() => {})
      await cluster.destroy()
    }
  })
}

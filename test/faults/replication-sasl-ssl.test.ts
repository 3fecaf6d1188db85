/**
 * Replication and the controller quorum over SASL_SSL: three real nodes whose replica fetchers
 * reach an INTERNAL listener (SASL_SSL, SCRAM-SHA-512, client certificates required) and whose raft
 * and broker-to-controller connections reach the CONTROLLER listener (SASL_SSL, PLAIN), as the fault
 * harness sets them up (harness/cluster.ts). Under kafkajs acks=all producers and a consumer group,
 * the leader of a partition and the active controller are killed and restarted: leaders fail over,
 * the ISR shrinks and the restarted node rejoins it, and nothing acknowledged is lost, duplicated
 * or reordered, every replica agreeing. Then a node restarted with a wrong inter-broker password and
 * one with a wrong controller password: each says why in one error line that holds no password,
 * stays up without retrying at raft's pace, and does not join (the ISR; the quorum and the
 * brokers) until its password is right again.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { after, test } from 'node:test'
import { KafkaConnection } from '../../src/client/index.ts'
import { nodeTransport, systemClock } from '../../src/io/index.ts'
import type { TopicName } from '../../src/model/index.ts'
import { apis } from '../../src/protocol/index.ts'
import { assertNoProblems } from './harness/assert-verdict.ts'
import { CONTROLLER_PASSWORD, FaultCluster, INTER_BROKER_PASSWORD } from './harness/cluster.ts'
import { runHarness } from './harness/run.ts'
import { createTopic } from './harness/workload.ts'

const WRONG_PASSWORD = 'wrong-ib-pw-61f0'
/** A killed node re-registers once its old session ends: short sessions keep the restarts short. */
const SHORT_SESSIONS = { 'broker.session.timeout.ms': 3_000, 'broker.heartbeat.interval.ms': 500 }
let cluster: FaultCluster | null = null
after(async () => {
  await cluster?.destroy()
})

test('acks=all with leader and controller kills over SASL_SSL: nothing acknowledged is lost, duplicated or reordered', {
  timeout: 150_000,
}, async () => {
  const lines: string[] = []
  const report = await runHarness({
    seed: 7,
    // Exactly two faults (each at most 5 s), one of each kind: the schedule's round-robin.
    durationMs: 10_000,
    partitions: 4,
    kinds: ['kill-leader', 'kill-controller'],
    security: 'SASL_SSL',
    config: SHORT_SESSIONS,
    timing: { gapMs: [1_500, 2_000], holdMs: [2_000, 3_000] },
    log: (line) => lines.push(line),
  })
  console.log(`${lines.join('\n')}\nreplay: ${report.replay}\n${report.table}`)
  const v = report.verdict
  const kinds = new Set(report.injected.map((f) => f.kind))
  assert.ok(kinds.has('kill-leader') && kinds.has('kill-controller'), `faults: ${[...kinds].join(', ')}`)
  assert.ok(v.acknowledged > 0, 'writes were acknowledged')
  assertNoProblems(v)
})

const TOPIC = 'secured'

async function ask<T>(port: number, fn: (c: KafkaConnection) => Promise<T>): Promise<T> {
  const c = await KafkaConnection.open(
    { host: cluster!.node(1).host, port },
    {
      clientId: 'sasl-ssl-test',
      clock: systemClock,
      transport: nodeTransport,
      requestTimeoutMs: 5_000,
      inFlightRequestsMax: 4,
      responseBytesMax: 1 << 24,
      connectTimeoutMs: 2_000,
    },
  )
  try {
    return await fn(c)
  } finally {
    c.close()
  }
}

/** The ISR of every partition of the topic, as node 1 sees it. */
async function view(): Promise<{ isrs: number[][] }> {
  const res = await ask(cluster!.node(1).port, (c) =>
    c.request(apis.Metadata, 12, { topics: [{ name: TOPIC as TopicName, topicId: undefined as never }] }),
  )
  return {
    isrs: (res.topics[0]?.partitions ?? []).map((p) => [...p.isrNodes].sort()),
  }
}

/** A process's CPU time so far (utime + stime, in clock ticks), from /proc. */
function cpuTicks(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  return Number(fields[11]) + Number(fields[12])
}

test('a wrong inter-broker or controller password: one clear error without the password, no retry storm, no joining', {
  timeout: 120_000,
}, async () => {
  cluster = await FaultCluster.start({
    nodes: 3,
    network: 'loopback',
    security: 'SASL_SSL',
    config: { ...SHORT_SESSIONS, 'replica.lag.time.max.ms': 2_000, 'offsets.topic.replication.factor': 3 },
  })
  const c = cluster
  await createTopic({
    brokers: c.bootstrap,
    topic: TOPIC,
    partitions: 3,
    replicationFactor: 3,
    insyncReplicasMin: 2,
    seed: 1,
    groupId: 'unused',
    log: () => {},
  })
  const inEveryIsr = async (id: number, wanted: boolean) =>
    FaultCluster.waitFor(
      `node ${id} ${wanted ? 'in' : 'out of'} every ISR`,
      async () => {
        const { isrs } = await view()
        return isrs.length === 3 && isrs.every((isr) => isr.includes(id) === wanted) ? true : undefined
      },
      60_000,
    )
  await inEveryIsr(3, true)
  const ib = 'listener.name.internal.scram-sha-512.sasl.jaas.config'
  const ctl = 'listener.name.controller.plain.sasl.jaas.config'
  const original = readFileSync(c.node(3).configPath, 'utf8')
  const originalValue = (key: string) =>
    original
      .split('\n')
      .find((l) => l.startsWith(`${key}=`))!
      .slice(key.length + 1)

  // A wrong inter-broker (SCRAM) password: the node registers through the controller listener, but
  // its fetchers are refused, so it never rejoins an ISR.
  await c.kill(3)
  await inEveryIsr(3, false)
  c.reconfigure(3, { [ib]: originalValue(ib).replace(INTER_BROKER_PASSWORD, WRONG_PASSWORD) })
  await c.restart(3)
  const node3 = c.node(3).process
  await FaultCluster.waitFor(
    'the refused fetcher logged',
    () => (/SASL SCRAM-SHA-512 authentication to \S+ failed/.test(node3.output) ? true : undefined),
    30_000,
  )
  const before = cpuTicks(node3.pid!)
  await new Promise((r) => setTimeout(r, 3_000))
  const ticks = cpuTicks(node3.pid!) - before
  console.log(`node 3 with a wrong inter-broker password: ${ticks} CPU ticks in 3 s`)
  assert.ok(node3.running)
  assert.deepEqual(
    (await view()).isrs.filter((isr) => isr.includes(3)),
    [],
  )

  // A wrong controller (PLAIN) password: raft and the controller channel are refused; one error
  // line each per streak, the node neither joins the quorum's view nor registers.
  await c.kill(3)
  c.reconfigure(3, {
    [ib]: originalValue(ib),
    [ctl]: originalValue(ctl).replace(`password="${CONTROLLER_PASSWORD}"`, `password="${WRONG_PASSWORD}"`),
  })
  const outputBefore = node3.output.length
  // It never says it is ready: it cannot catch up with the metadata log.
  void node3.start(8_000).catch(() => {})
  await FaultCluster.waitFor(
    'the refused raft connection logged',
    () =>
      /ERROR raft: SASL PLAIN authentication to \S+ failed/.test(node3.output.slice(outputBefore))
        ? true
        : undefined,
    30_000,
  )
  const beforeController = cpuTicks(node3.pid!)
  await new Promise((r) => setTimeout(r, 3_000))
  const controllerTicks = cpuTicks(node3.pid!) - beforeController
  console.log(`node 3 with a wrong controller password: ${controllerTicks} CPU ticks in 3 s`)
  assert.ok(node3.running, 'no crash')
  const restarted = node3.output.slice(outputBefore)
  const refusals = restarted.split('\n').filter((l) => /ERROR raft: SASL PLAIN authentication/.test(l))
  // One line per voter per streak, not one per retry.
  assert.ok(refusals.length <= 2, restarted)
  assert.doesNotMatch(restarted, /registered as broker 3|broker unfenced/)
  for (const n of c.nodes) {
    for (const secret of [WRONG_PASSWORD, INTER_BROKER_PASSWORD, CONTROLLER_PASSWORD])
      assert.ok(!n.process.output.includes(secret), `node ${n.id} printed a password`)
  }

  // The right passwords again: it joins every ISR.
  await c.kill(3)
  c.reconfigure(3, { [ctl]: originalValue(ctl) })
  await c.restart(3)
  await inEveryIsr(3, true)
})

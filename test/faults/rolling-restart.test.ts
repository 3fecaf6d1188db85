/**
 * A rolling restart of three real `weir start` processes (combined nodes) under two Java
 * producers sending without pause to every partition of a topic with RF 3 and
 * min.insync.replicas 2: one that never retries (retries=0, acks=all, no idempotence) and one with
 * KafkaProducer's defaults (idempotent, acks=all). Each node in turn is stopped with SIGTERM,
 * started again and waited for until it is back in every ISR. A clean stop hands its leaderships
 * over while it still serves, as Kafka's controlled shutdown does: the producer without retries
 * loses only the sends that met a leadership move, answered NOT_LEADER_OR_FOLLOWER naming the new
 * leader while the stopping node still answered (never a refused or cut connection, never while a
 * node is down, restarting or rejoining); the default producer sees no error, no duplicate, and no
 * partition goes long without an acknowledgement; every acknowledged record is read back where
 * its ack said. The same with kill -9 instead of SIGTERM: only the sends in flight to the killed
 * leader fail (NetworkException), never one refused by a new leader as NOT_LEADER_OR_FOLLOWER
 * (the restarted node itself may refuse a batch a producer addressed to it from stale metadata).
 * `bench/rolling-restart.ts` (`STOP=kill` for the second) runs the same against Apache Kafka.
 *
 *   ROLLING_RESTART_ROUNDS=3 node --test test/faults/rolling-restart.test.ts
 */
import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { WeirCluster } from '../support/cluster.ts'
import { rollingRestart } from '../support/rolling-restart.ts'

const ROUNDS = Number(process.env.ROLLING_RESTART_ROUNDS ?? 1)
/** The longest a partition may go without an acknowledgement of the default producer. */
const ACK_GAP_MS_MAX = 2000

let cluster: WeirCluster | null = null
after(async () => {
  await cluster?.kill()
})

test('rolling restart under Java producers: only leadership moves fail a send without retries, nothing else', {
  timeout: 120_000 + ROUNDS * 120_000,
}, async () => {
  cluster = await WeirCluster.start({ nodes: 3, prefix: 'weir-rolling-restart-' })
  const c = cluster
  const result = await rollingRestart(
    {
      name: 'weir',
      bootstrap: c.bootstrap,
      nodes: c.nodes.map((n) => ({
        id: n.id,
        port: n.port,
        stop: async () => {
          assert.equal(await n.process.stop(), 0, c.outputTail(3000))
        },
        start: () => n.process.start(60_000),
      })),
    },
    { rounds: ROUNDS, log: (line) => console.log(line) },
  )
  console.log(JSON.stringify({ ...result, timeline: undefined }))
  const { noretry, default: retrying } = result
  const timeline = `\n${result.timeline.join('\n')}`
  for (const r of [noretry, retrying]) {
    assert.ok(r.acked > 1000, `the producer kept sending: ${r.acked} acknowledged`)
    assert.deepEqual(r.lostSamples, [], 'acknowledged records read back where their ack said')
    assert.equal(r.lost, 0)
  }
  assert.deepEqual(
    result.failures.filter((f) => f.exception !== 'NotLeaderOrFollowerException' || f.phase !== 'stopping'),
    [],
    `only NOT_LEADER_OR_FOLLOWER, only while a node stops:${timeline}`,
  )
  assert.deepEqual({ failed: retrying.failed, duplicates: retrying.duplicates }, { failed: 0, duplicates: 0 })
  for (const [partition, gapMs] of Object.entries(retrying.ackGapMsMax))
    assert.ok(gapMs <= ACK_GAP_MS_MAX, `partition ${partition} went ${gapMs} ms without an ack:${timeline}`)
})

test('kill -9 of each node in turn under Java producers: the new leaders never refuse a send as NOT_LEADER_OR_FOLLOWER', {
  timeout: 180_000 + ROUNDS * 180_000,
}, async () => {
  await cluster?.kill()
  cluster = await WeirCluster.start({ nodes: 3, prefix: 'weir-rolling-kill-' })
  const c = cluster
  const result = await rollingRestart(
    {
      name: 'weir',
      bootstrap: c.bootstrap,
      nodes: c.nodes.map((n) => ({
        id: n.id,
        port: n.port,
        stop: () => n.process.kill(),
        start: () => n.process.start(60_000),
      })),
    },
    { rounds: ROUNDS, startAfterLeadersMoved: true, log: (line) => console.log(line) },
  )
  console.log(JSON.stringify({ ...result, timeline: undefined }))
  const { noretry, default: retrying } = result
  for (const r of [noretry, retrying]) {
    assert.ok(r.acked > 1000, `the producer kept sending: ${r.acked} acknowledged`)
    assert.deepEqual(r.lostSamples, [], 'acknowledged records read back where their ack said')
    assert.equal(r.lost, 0)
  }
  // Only the sends in flight to the killed leader fail (its connection is cut): a new leader
  // answers as the leader from the moment Metadata names it. Once the killed node runs again, a
  // producer whose metadata still names it leader (older than the move) may send it a batch, which
  // it answers NOT_LEADER_OR_FOLLOWER as Kafka's broker does; that says nothing of the new leaders.
  const restarted: ReadonlySet<string> = new Set(['starting', 'rejoining', 'rejoined'])
  assert.deepEqual(
    result.failures.filter(
      (f) =>
        f.exception !== 'NetworkException' &&
        !(f.exception === 'NotLeaderOrFollowerException' && restarted.has(f.phase)),
    ),
    [],
    `only the killed leader's cut connections:\n${result.timeline.join('\n')}`,
  )
  assert.deepEqual({ failed: retrying.failed, duplicates: retrying.duplicates }, { failed: 0, duplicates: 0 })
})

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ManualClock } from '../io/index.ts'
import type { BrokerId, TopicName, Uuid } from '../model/index.ts'
import { type AlterPartitionRequestData, ErrorCode } from '../protocol/index.ts'
import { AlterPartitionManager } from './alter-partition-manager.ts'
import type { IsrChangeAnswer, PendingIsrChange } from './partition.ts'

const b = (n: number) => n as BrokerId
const topicId = Buffer.alloc(16, 4).toString('base64url') as Uuid

async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise<void>((resolve) => setImmediate(resolve))
}

function change(isr: number[]): PendingIsrChange {
  return {
    isr: isr.map(b),
    members: isr.map((id) => ({ brokerId: b(id), brokerEpoch: BigInt(id * 10) })),
    expand: false,
    leaderEpoch: 3,
    partitionEpoch: 7,
    leaderRecoveryState: 0,
  }
}

test('AlterPartitionManager: one request in flight batching what queued meanwhile; a failure retried after the backoff, with what queued meanwhile', async () => {
  const clock = new ManualClock()
  const sent: AlterPartitionRequestData.AlterPartitionRequest[] = []
  let fail = true
  const manager = new AlterPartitionManager({
    nodeId: b(1),
    brokerEpoch: () => 42n,
    clock,
    retryBackoffMs: 100,
    send: async (req) => {
      sent.push(req)
      await settle()
      if (fail) throw new Error('controller unreachable')
      return {
        errorCode: ErrorCode.None,
        topics: req.topics.map((t) => ({
          topicId: t.topicId,
          partitions: t.partitions.map((p) => ({
            partitionIndex: p.partitionIndex,
            errorCode: p.partitionIndex === 2 ? ErrorCode.InvalidUpdateVersion : ErrorCode.None,
            leaderId: b(1),
            leaderEpoch: p.leaderEpoch,
            isr: p.newIsrWithEpochs.map((m) => m.brokerId),
            partitionEpoch: p.partitionEpoch + 1,
          })),
        })),
      }
    },
  })
  const answers = new Map<number, IsrChangeAnswer>()
  const submit = (partition: number, isr: number[]) =>
    manager.submit({
      topic: 't' as TopicName,
      topicId,
      partition,
      change: change(isr),
      wanted: () => !answers.has(partition),
      answer: (a) => answers.set(partition, a),
    })
  submit(0, [1, 2])
  submit(1, [1, 3]) // queued behind the request in flight
  submit(2, [1])
  await settle()
  assert.equal(sent.length, 1)
  assert.equal(sent[0]?.brokerEpoch, 42n)
  assert.deepEqual(sent[0]?.topics[0]?.partitions[0]?.newIsrWithEpochs, [
    { brokerId: 1, brokerEpoch: 10n },
    { brokerId: 2, brokerEpoch: 20n },
  ])
  assert.deepEqual(sent[0]?.topics[0]?.partitions[0]?.newIsr, [], "v3's form only")
  // The first request failed: after the backoff, it goes again with the queued ones, in one request.
  fail = false
  await settle()
  clock.advance(100)
  await settle()
  await settle()
  assert.equal(sent.length, 2)
  assert.deepEqual(
    sent[1]?.topics[0]?.partitions.map((p) => p.partitionIndex),
    [1, 2, 0],
  )
  assert.deepEqual(answers.get(0), { errorCode: 0, leaderEpoch: 3, partitionEpoch: 8, isr: [1, 2] })
  assert.equal(answers.get(2)?.errorCode, ErrorCode.InvalidUpdateVersion)
  manager.close()
})

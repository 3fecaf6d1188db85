import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { EMPTY_IMAGE, type MetadataImage, NO_LEADER } from '../metadata/index.ts'
import type { BrokerId, TopicName, Uuid } from '../model/index.ts'
import {
  type AlterPartitionReassignmentsRequestData,
  ErrorCode,
  metadataRecordTypes as T,
} from '../protocol/index.ts'
import { alterPartition } from './alter-partition.ts'
import { fenceBroker } from './brokers.ts'
import type { NodeConfigSource } from './configs.ts'
import { type PendingRecord, pendingRecord } from './decision.ts'
import { aliveIn, electLeaderless, electLeaders } from './elections.ts'
import { uncleanElections } from './leadership.ts'
import {
  alterPartitionReassignments,
  completeReassignments,
  listPartitionReassignments,
} from './reassignment.ts'
import { commit } from './testing.ts'

const b = (n: number) => n as BrokerId
const topicId = Buffer.alloc(16, 7).toString('base64url') as Uuid
const t = 'r' as TopicName

/** Four live brokers; r-0 on [1,2] led by 1, ISR [1,2]. */
function cluster(): MetadataImage {
  const records: PendingRecord[] = []
  for (const id of [1, 2, 3, 4]) {
    records.push(
      pendingRecord(T.RegisterBroker, 0, {
        brokerId: b(id),
        brokerEpoch: BigInt(id),
        incarnationId: Buffer.alloc(16, id).toString('base64url') as Uuid,
        fenced: false,
      }),
    )
  }
  records.push(pendingRecord(T.Topic, 0, { name: t, topicId }))
  records.push(
    pendingRecord(T.Partition, 0, {
      topicId,
      partitionId: 0,
      replicas: [b(1), b(2)],
      isr: [1, 2],
      leader: b(1),
      leaderEpoch: 0,
      partitionEpoch: 0,
    }),
  )
  return commit(EMPTY_IMAGE, records)
}

/** The controller node's config layers: nothing set, so Kafka's defaults (unclean election off). */
const NODE: NodeConfigSource = { nodeId: 1, staticBroker: new Map() }
const UNCLEAN_NODE: NodeConfigSource = {
  nodeId: 1,
  staticBroker: new Map([['unclean.leader.election.enable', 'true']]),
}

const part = (image: MetadataImage) => image.topicsById.get(topicId)!.partitions.get(0)!

function alter(
  image: MetadataImage,
  partitions: Array<{ partitionIndex: number; replicas: number[] | null }>,
  name: string = t,
  node: NodeConfigSource = NODE,
) {
  const req: AlterPartitionReassignmentsRequestData.AlterPartitionReassignmentsRequest = {
    timeoutMs: 30_000,
    topics: [
      {
        name: name as TopicName,
        partitions: partitions.map((p) => ({
          partitionIndex: p.partitionIndex,
          replicas: p.replicas === null ? null : p.replicas.map(b),
        })),
      },
    ],
  }
  return alterPartitionReassignments(image, req, node)
}

const errors = (d: ReturnType<typeof alter>) =>
  d.response.responses!.flatMap((r) => r.partitions!.map((p) => p.errorCode))

test('a reassignment writes target ∪ current with adding and removing, and keeps the leader', () => {
  const image = cluster()
  const d = alter(image, [{ partitionIndex: 0, replicas: [3, 4] }])
  assert.deepEqual(errors(d), [ErrorCode.None])
  const after = commit(image, d.records)
  const p = part(after)
  assert.deepEqual(p.replicas, [3, 4, 1, 2])
  assert.deepEqual(p.addingReplicas, [3, 4])
  assert.deepEqual(p.removingReplicas, [1, 2])
  assert.deepEqual(p.isr, [1, 2])
  assert.equal(p.leader, 1)
  const listed = listPartitionReassignments(after, { timeoutMs: 0, topics: null })
  assert.deepEqual(listed.topics, [
    {
      name: t,
      partitions: [
        { partitionIndex: 0, replicas: [3, 4, 1, 2], addingReplicas: [3, 4], removingReplicas: [1, 2] },
      ],
    },
  ])
  // Not complete until every adding replica is in the ISR.
  assert.deepEqual(completeReassignments(after), [])
  const oneCaughtUp = commit(after, [
    pendingRecord(T.PartitionChange, 0, { topicId, partitionId: 0, isr: [1, 2, 3].map(b) }),
  ])
  assert.deepEqual(completeReassignments(oneCaughtUp), [])
  const allCaughtUp = commit(oneCaughtUp, [
    pendingRecord(T.PartitionChange, 0, { topicId, partitionId: 0, isr: [1, 2, 3, 4].map(b) }),
  ])
  const done = commit(allCaughtUp, completeReassignments(allCaughtUp))
  const q = part(done)
  assert.deepEqual(q.replicas, [3, 4])
  assert.deepEqual(q.isr, [3, 4])
  assert.deepEqual(q.addingReplicas, [])
  assert.deepEqual(q.removingReplicas, [])
  assert.equal(q.leader, 3, 'the removed leader hands over to the first target replica in the ISR')
  assert.equal(q.leaderEpoch, part(image).leaderEpoch + 1)
  assert.deepEqual(listPartitionReassignments(done, { timeoutMs: 0, topics: null }).topics, [])
})

test('a reassignment whose target is already in the ISR completes at once', () => {
  const image = cluster()
  const d = alter(image, [{ partitionIndex: 0, replicas: [2] }])
  assert.deepEqual(errors(d), [ErrorCode.None])
  const p = part(commit(image, d.records))
  assert.deepEqual(p.replicas, [2])
  assert.deepEqual(p.isr, [2])
  assert.equal(p.leader, 2)
  assert.deepEqual(p.addingReplicas, [])
})

test('the same replicas is no change and nothing is written', () => {
  const d = alter(cluster(), [{ partitionIndex: 0, replicas: [1, 2] }])
  assert.deepEqual(errors(d), [ErrorCode.None])
  assert.equal(d.records.length, 0)
})

test('a cancel reverts to the original replicas; a cancel of none is NO_REASSIGNMENT_IN_PROGRESS', () => {
  const image = cluster()
  assert.deepEqual(errors(alter(image, [{ partitionIndex: 0, replicas: null }])), [
    ErrorCode.NoReassignmentInProgress,
  ])
  const started = commit(image, alter(image, [{ partitionIndex: 0, replicas: [1, 3] }]).records)
  const caught = commit(started, [
    pendingRecord(T.PartitionChange, 0, { topicId, partitionId: 0, isr: [1, 2].map(b) }),
  ])
  const d = alter(caught, [{ partitionIndex: 0, replicas: null }])
  assert.deepEqual(errors(d), [ErrorCode.None])
  const p = part(commit(caught, d.records))
  assert.deepEqual(p.replicas, [1, 2])
  assert.deepEqual(p.isr, [1, 2])
  assert.deepEqual(p.addingReplicas, [])
  assert.deepEqual(p.removingReplicas, [])
  assert.equal(p.leader, 1)
})

test('a new reassignment replaces an ongoing one from the current replicas, as Kafka', () => {
  const image = cluster()
  const first = commit(image, alter(image, [{ partitionIndex: 0, replicas: [3] }]).records)
  assert.deepEqual(part(first).replicas, [3, 1, 2])
  const d = alter(first, [{ partitionIndex: 0, replicas: [1, 4] }])
  const p = part(commit(first, d.records))
  // removing = [3,1,2] − [1,4], ascending; 3 stays a replica until the reassignment completes.
  assert.deepEqual(p.replicas, [1, 4, 2, 3])
  assert.deepEqual(p.addingReplicas, [4])
  assert.deepEqual(p.removingReplicas, [2, 3])
  assert.deepEqual(p.isr, [1, 2])
  assert.equal(p.leader, 1)
})

test('bad targets: unknown topic or partition, empty, duplicate or unregistered replicas', () => {
  const image = cluster()
  assert.deepEqual(errors(alter(image, [{ partitionIndex: 0, replicas: [1] }], 'nope')), [
    ErrorCode.UnknownTopicOrPartition,
  ])
  const d = alter(image, [
    { partitionIndex: 5, replicas: [1] },
    { partitionIndex: 0, replicas: [] },
    { partitionIndex: 0, replicas: [3, 3] },
    { partitionIndex: 0, replicas: [3, 9] },
  ])
  assert.deepEqual(errors(d), [
    ErrorCode.UnknownTopicOrPartition,
    ErrorCode.InvalidReplicaAssignment,
    ErrorCode.InvalidReplicaAssignment,
    ErrorCode.InvalidReplicaAssignment,
  ])
  assert.match(
    d.response.responses![0]!.partitions![3]!.errorMessage!,
    /broker 9, but no such broker is registered/,
  )
  assert.equal(d.records.length, 0)
})

test('a reassignment waits while the adding replica is out of the ISR, and a dead target leader is skipped', () => {
  let image = cluster()
  image = commit(image, alter(image, [{ partitionIndex: 0, replicas: [3, 2] }]).records)
  image = commit(image, [
    pendingRecord(T.PartitionChange, 0, { topicId, partitionId: 0, isr: [1, 2, 3].map(b) }),
  ])
  // Broker 3 is alive and in the ISR: it leads. With 3 dead, 2 (in target and ISR) leads instead.
  const alive3 = completeReassignments(image, (id) => id !== b(1))
  assert.equal(part(commit(image, alive3)).leader, 3)
  const dead3 = completeReassignments(image, (id) => id !== b(1) && id !== b(3))
  assert.equal(part(commit(image, dead3)).leader, 2)
})

test('a reassignment replaced after its adding replica took the lead keeps the leader in the ISR (Kafka: from the current replicas)', () => {
  // r-0 on [1,2], ISR [1,2]; reassigned to [3,4]; 3 catches up, joins the ISR and becomes leader
  // through a preferred election (it heads the replicas [3,4,1,2]).
  let image = cluster()
  image = commit(image, alter(image, [{ partitionIndex: 0, replicas: [3, 4] }]).records)
  image = commit(image, [
    pendingRecord(T.PartitionChange, 0, { topicId, partitionId: 0, isr: [1, 2, 3].map(b) }),
  ])
  const elected = electLeaders(
    image,
    { timeoutMs: 0, electionType: 0, topicPartitions: [{ topic: t, partitions: [0] }] },
    1,
  )
  image = commit(image, elected.records)
  assert.equal(part(image).leader, 3)
  const before = part(image)
  // Replaced with [3,1] while it is in progress.
  const d = alter(image, [{ partitionIndex: 0, replicas: [3, 1] }])
  assert.deepEqual(errors(d), [ErrorCode.None])
  const p = part(commit(image, d.records))
  assert.ok(p.isr.includes(p.leader), `leader ${p.leader} outside the ISR [${p.isr.join(',')}]`)
  // As Kafka 4.0: removing = current − target = [2,4]; every target replica (3 and 1) is already
  // in the ISR, so the same record completes it: replicas [3,1], ISR [1,2,3] − [2,4], leader 3
  // kept, its epoch bumped because replicas were removed.
  assert.deepEqual(p.replicas, [3, 1])
  assert.deepEqual(p.isr, [1, 3])
  assert.deepEqual(p.addingReplicas, [])
  assert.deepEqual(p.removingReplicas, [])
  assert.equal(p.leader, 3)
  assert.equal(p.leaderEpoch, before.leaderEpoch + 1)
})

test('a reassignment completes only once every target replica is in the ISR, not only the adding ones (Kafka)', () => {
  let image = cluster()
  image = commit(image, [pendingRecord(T.PartitionChange, 0, { topicId, partitionId: 0, isr: [b(1)] })])
  // Target [2,3]: 2 is a replica already but out of the ISR; 3 is added.
  image = commit(image, alter(image, [{ partitionIndex: 0, replicas: [2, 3] }]).records)
  image = commit(image, [
    pendingRecord(T.PartitionChange, 0, { topicId, partitionId: 0, isr: [1, 3].map(b) }),
  ])
  assert.deepEqual(completeReassignments(image), [], '2 is still out of the ISR')
  image = commit(image, [
    pendingRecord(T.PartitionChange, 0, { topicId, partitionId: 0, isr: [1, 3, 2].map(b) }),
  ])
  const p = part(commit(image, completeReassignments(image)))
  assert.deepEqual([p.replicas, p.isr, p.leader], [[2, 3], [3, 2], 2])
})

test('a cancel that leaves no ISR member is an unclean election: refused unless the topic allows it', () => {
  let image = cluster()
  image = commit(image, alter(image, [{ partitionIndex: 0, replicas: [3, 4] }]).records)
  // 3 caught up and took the lead; 1 and 2 fell out of the ISR.
  image = commit(image, [
    pendingRecord(T.PartitionChange, 0, { topicId, partitionId: 0, isr: [1, 2, 3].map(b) }),
  ])
  image = commit(image, [pendingRecord(T.PartitionChange, 0, { topicId, partitionId: 0, leader: b(3) })])
  image = commit(image, [pendingRecord(T.PartitionChange, 0, { topicId, partitionId: 0, isr: [b(3)] })])
  const refused = alter(image, [{ partitionIndex: 0, replicas: null }])
  assert.deepEqual(errors(refused), [ErrorCode.InvalidReplicaAssignment])
  assert.equal(
    refused.response.responses![0]!.partitions![0]!.errorMessage,
    'Unable to revert partition assignment for r:0 because it would require an unclean leader election.',
  )
  assert.equal(refused.records.length, 0)
  const allowed = alter(image, [{ partitionIndex: 0, replicas: null }], t, UNCLEAN_NODE)
  assert.deepEqual(errors(allowed), [ErrorCode.None])
  const p = part(commit(image, allowed.records))
  // Kafka: replicas [1,2], ISR [first replica], and 1 leads (it is in that ISR: no recovery).
  assert.deepEqual(
    [p.replicas, p.isr, p.leader, p.addingReplicas, p.removingReplicas],
    [[1, 2], [1], 1, [], []],
  )
})

/** Every partition state a broker can be handed: the controller's invariants. */
function checkInvariants(image: MetadataImage, step: string): void {
  const p = part(image)
  const where = `${step}: replicas [${p.replicas}] isr [${p.isr}] leader ${p.leader} adding [${p.addingReplicas}] removing [${p.removingReplicas}]`
  assert.ok(p.isr.length > 0, `empty ISR after ${where}`)
  assert.ok(p.leader === NO_LEADER || p.isr.includes(p.leader), `leader outside the ISR after ${where}`)
  assert.ok(
    p.isr.every((r) => p.replicas.includes(r)),
    `ISR outside the replicas after ${where}`,
  )
  assert.equal(new Set(p.replicas).size, p.replicas.length, `duplicate replicas after ${where}`)
  assert.equal(new Set(p.isr).size, p.isr.length, `duplicate ISR members after ${where}`)
  for (const r of [...p.addingReplicas, ...p.removingReplicas])
    assert.ok(p.replicas.includes(r), `adding or removing outside the replicas after ${where}`)
}

type Step =
  | { kind: 'reassign'; target: number[] }
  | { kind: 'cancel' }
  | { kind: 'isr'; members: number[] }
  | { kind: 'fence'; broker: number }
  | { kind: 'unfence'; broker: number }
  | { kind: 'preferred' }

const brokerIds = [1, 2, 3, 4]
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    kind: fc.constant('reassign' as const),
    target: fc.shuffledSubarray(brokerIds, { minLength: 1 }),
  }),
  fc.record({ kind: fc.constant('cancel' as const) }),
  fc.record({ kind: fc.constant('isr' as const), members: fc.subarray(brokerIds) }),
  fc.record({ kind: fc.constant('fence' as const), broker: fc.constantFrom(...brokerIds) }),
  fc.record({ kind: fc.constant('unfence' as const), broker: fc.constantFrom(...brokerIds) }),
  fc.record({ kind: fc.constant('preferred' as const) }),
)

test('property: reassignments, replacements, cancels, ISR changes and fencing keep leader ∈ ISR ⊆ replicas', () => {
  fc.assert(
    fc.property(fc.boolean(), fc.array(stepArb, { maxLength: 25 }), (unclean, steps) => {
      const node = unclean ? UNCLEAN_NODE : NODE
      let image = cluster()
      // Every record applied one at a time, so every state a broker can see is checked; after each
      // decision the controller's own follow-ups run, as QuorumController runs them after a commit.
      const publish = (records: readonly PendingRecord[], step: string) => {
        for (const r of records) {
          image = commit(image, [r])
          checkInvariants(image, step)
        }
      }
      const followUps = (step: string) => {
        for (let i = 0; i < 4; i++) {
          const more = [...completeReassignments(image), ...uncleanElections(image, node)]
          if (more.length === 0) return
          publish(more, `${step} (follow-up)`)
        }
      }
      checkInvariants(image, 'start')
      for (const s of steps) {
        const label = JSON.stringify(s)
        const p = part(image)
        switch (s.kind) {
          case 'reassign':
            publish(alter(image, [{ partitionIndex: 0, replicas: s.target }], t, node).records, label)
            break
          case 'cancel':
            publish(alter(image, [{ partitionIndex: 0, replicas: null }], t, node).records, label)
            break
          case 'isr': {
            // The leader proposes an ISR of itself and some replicas; the controller validates it.
            if (p.leader === NO_LEADER) break
            const isr = [
              p.leader,
              ...s.members.filter((r) => r !== p.leader && p.replicas.includes(b(r))).map(b),
            ]
            const leader = image.brokers.get(p.leader)!
            const d = alterPartition(
              image,
              {
                brokerId: p.leader,
                brokerEpoch: leader.epoch,
                topics: [
                  {
                    topicId,
                    partitions: [
                      {
                        partitionIndex: 0,
                        leaderEpoch: p.leaderEpoch,
                        newIsr: isr,
                        newIsrWithEpochs: isr.map((id) => ({
                          brokerId: id,
                          brokerEpoch: image.brokers.get(id)!.epoch,
                        })),
                        leaderRecoveryState: 0,
                        partitionEpoch: p.partitionEpoch,
                      },
                    ],
                  },
                ],
              },
              3,
            )
            publish(d.records, label)
            break
          }
          case 'fence':
            publish(fenceBroker(image, b(s.broker)), label)
            break
          case 'unfence': {
            const broker = image.brokers.get(b(s.broker))!
            if (!broker.fenced) break
            publish(
              [
                pendingRecord(T.BrokerRegistrationChange, 0, {
                  brokerId: b(s.broker),
                  brokerEpoch: broker.epoch,
                  fenced: -1,
                }),
              ],
              label,
            )
            publish(electLeaderless(image, aliveIn(image)), label)
            break
          }
          case 'preferred':
            publish(
              electLeaders(
                image,
                { timeoutMs: 0, electionType: 0, topicPartitions: [{ topic: t, partitions: [0] }] },
                1,
              ).records,
              label,
            )
            break
        }
        followUps(label)
      }
    }),
    { numRuns: 500 },
  )
})

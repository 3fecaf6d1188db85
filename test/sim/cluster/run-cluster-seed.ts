/**
 * One whole-cluster simulation run from one seed: the seed picks the cluster (3 to 5 brokers),
 * Kafka's timeouts scaled down, min.insync.replicas, the network, slow disks and clock skew, and a
 * schedule of faults (process kills and power losses — also of leaders and in the middle of
 * appends and fsyncs —, symmetric and one-way partitions, isolated leaders, controller failovers,
 * network changes). Idempotent acks=all producers and consumers run throughout. Then faults stop,
 * everything heals and restarts, and the cluster must converge: every broker unfenced, every
 * partition led with its full ISR, all replicas equal up to the high watermark, and every
 * acknowledged record read back from its leader.
 */

import { GROUP_METADATA_TOPIC_NAME, partitionForGroup } from '../../../src/coordinator/index.ts'
import { SeededRandom } from '../../../src/io/random.ts'
import type { BrokerId, GroupId, TopicName } from '../../../src/model/index.ts'
import { ErrorCode, encodeBatch, isControl, readBatchHeader } from '../../../src/protocol/index.ts'
import type { ReadOutcome } from '../../../src/replication/index.ts'
import { ClusterChecker, ClusterInvariant, ClusterViolation } from './cluster-invariants.ts'
import { type BrokerTimings, SimBroker } from './sim-broker.ts'
import { CONTROLLER_ID, SimController } from './sim-controller.ts'
import { TxnWorkload } from './sim-transactions.ts'
import { CALM_NETWORK, type NetworkProfile, NodeClock, type SimEndpoint, SimWorld } from './sim-world.ts'

export interface ClusterPlan {
  readonly seed: number
  readonly brokers: number
  readonly partitions: number
  readonly replicationFactor: number
  readonly insyncReplicasMin: number
  /** Kafka's default timeouts times this. */
  readonly timeScale: number
  readonly timings: BrokerTimings
  readonly sessionTimeoutMs: number
  readonly network: NetworkProfile
  readonly clockSkew: number
  readonly slowDisk: { readonly rate: number; readonly msMax: number }
  readonly powerLossShare: number
  readonly faultPhaseMs: number
  readonly faultGapMs: number
  readonly producers: number
  readonly produceGapMs: number
  readonly convergenceBoundMs: number
  /** Producers' and consumers' request.timeout.ms (and the produce's acks timeout). */
  readonly clientTimeoutMs: number
  /** `offsets.topic.num.partitions` (the group's offsets live on one of them). */
  readonly offsetsPartitions: number
}

export interface ClusterSeedResult {
  readonly seed: number
  readonly ok: boolean
  readonly invariant?: ClusterInvariant
  readonly message?: string
  readonly atMs?: number
  readonly plan: ClusterPlan
  readonly events: number
  readonly simulatedMs: number
  readonly acked: number
  /** Offset commits the group coordinator acknowledged. */
  readonly commits: number
  readonly crashes: number
  readonly excusedLosses: number
  readonly anomalies: number
  /** Transactions completed (committed, aborted) by the transactional workload. */
  readonly transactions: { readonly committed: number; readonly aborted: number }
  readonly traceHash: string
  readonly trace: readonly string[]
}

function pick<T>(random: SeededRandom, choices: readonly T[]): T {
  return choices[random.int(choices.length)]!
}

function faultNetwork(random: SeededRandom, timeScale: number): NetworkProfile {
  const delayMsMin = 0.2 + random.nextFloat()
  return {
    dropRate: pick(random, [0, 0, 0.01, 0.05, 0.2]),
    delayMsMin,
    delayMsMax: delayMsMin + pick(random, [0, 2, 10, Math.round(100 * timeScale)]),
    longDelayRate: pick(random, [0, 0.01, 0.05]),
    longDelayMsMax: Math.round(1000 * timeScale),
  }
}

export function planClusterSeed(seed: number): ClusterPlan {
  const random = new SeededRandom(BigInt(seed) + (5n << 40n))
  const timeScale = pick(random, [0.1, 0.1, 0.2])
  const ms = (kafkaDefaultMs: number) => Math.max(1, Math.round(kafkaDefaultMs * timeScale))
  const brokers = pick(random, [3, 3, 4, 5])
  const replicationFactor = Math.min(brokers, pick(random, [2, 3, 3, 3]))
  return {
    seed,
    brokers,
    partitions: pick(random, [1, 2, 3]),
    replicationFactor,
    insyncReplicasMin: pick(random, [1, 2, 2, replicationFactor]),
    timeScale,
    timings: {
      heartbeatIntervalMs: ms(2000),
      requestTimeoutMs: ms(30_000),
      fetchWaitMsMax: ms(500),
      fetchBackoffMs: ms(1000),
      lagTimeMsMax: ms(30_000),
      hwCheckpointIntervalMs: ms(5000),
      metadataPullMs: ms(500),
    },
    sessionTimeoutMs: ms(9000),
    network: faultNetwork(random, timeScale),
    clockSkew: pick(random, [0, 0.001, 0.02]),
    slowDisk: { rate: pick(random, [0, 0.05, 0.3]), msMax: pick(random, [1, 5, ms(200)]) },
    powerLossShare: pick(random, [0, 0.1, 0.25]),
    faultPhaseMs: ms(30_000 + random.int(60_000)),
    faultGapMs: ms(1000 + random.int(5000)),
    producers: pick(random, [1, 2, 3]),
    produceGapMs: pick(random, [1, 5, 20]),
    convergenceBoundMs: ms(200_000),
    clientTimeoutMs: ms(5000),
    offsetsPartitions: pick(random, [1, 3]),
  }
}

const TOPIC = 'sim' as TopicName
/**
 * The share of seeds with full disks: a broker's writes fail with ENOSPC for a while, so its log
 * dir goes offline (reported in heartbeats, leaderships moved) and comes back through recovery.
 */
const DISK_FULL_SEED_SHARE = 0.3
/**
 * The share of seeds with a transactional producer and read_committed consumers
 * (`SIM_TXN_SEED_SHARE` overrides it: 1 gives every seed transactions).
 */
const TXN_SEED_SHARE = Number(process.env.SIM_TXN_SEED_SHARE ?? 0.3)

interface ClientEndpoint extends SimEndpoint {
  readonly clock: NodeClock
}

/** Run one seed to the end; never throws for a violation, it reports it. */
export async function runClusterSeed(
  seed: number,
  options: { trace?: boolean; transactions?: boolean } = {},
): Promise<ClusterSeedResult> {
  const plan = planClusterSeed(seed)
  // Start-up on a calm network; the seed's network comes with the faults.
  const world = new SimWorld(seed, CALM_NETWORK, options.trace ?? false)
  const seeds = new SeededRandom(BigInt(seed) + (6n << 40n))
  const faults = new SeededRandom(seeds.nextU32())
  const workload = new SeededRandom(seeds.nextU32())
  const checker = new ClusterChecker((line) => world.log(line))
  const controller = new SimController(world, new SeededRandom(seeds.nextU32()), {
    sessionTimeoutMs: plan.sessionTimeoutMs,
    commitDelayMsMax: Math.max(2, 10 * plan.timeScale),
  })
  world.endpoints.set(CONTROLLER_ID, controller)
  const brokers: SimBroker[] = []
  const peers = { controller, broker: (id: number) => brokers[id - 1]! }
  for (let i = 1; i <= plan.brokers; i++) {
    const rate = 1 + (seeds.nextFloat() * 2 - 1) * plan.clockSkew
    const b = new SimBroker(
      i,
      world,
      new SeededRandom(seeds.nextU32()),
      plan.timings,
      peers,
      { rate, wallOffsetMs: 1_700_000_000_000 + seeds.int(10_000) },
      plan.slowDisk,
      new Map([
        ['offsets.topic.num.partitions', String(plan.offsetsPartitions)],
        ['offsets.topic.replication.factor', String(plan.replicationFactor)],
        ['offsets.commit.timeout.ms', String(plan.clientTimeoutMs)],
      ]),
    )
    brokers.push(b)
    world.endpoints.set(i, b)
  }
  // Commits reach every broker at once (and the brokers also pull, for what the network lost).
  const lastSeen = new Map<string, string>()
  controller.onCommit = () => {
    const image = controller.loader.image
    for (const name of [TOPIC, GROUP_METADATA_TOPIC_NAME]) {
      for (const [index, r] of image.topicsByName.get(name)?.partitions ?? []) {
        const line = `leader ${r.leader} epoch ${r.leaderEpoch} isr [${r.isr}] partition epoch ${r.partitionEpoch}`
        if (lastSeen.get(`${name}-${index}`) === line) continue
        lastSeen.set(`${name}-${index}`, line)
        world.log(`META ${name}-${index}: ${line}`)
      }
    }
    for (const b of image.brokers.values()) {
      const line = b.fenced ? 'fenced' : 'unfenced'
      if (lastSeen.get(`b${b.id}`) === line) continue
      lastSeen.set(`b${b.id}`, line)
      world.log(`META broker ${b.id} ${line} (epoch ${b.epoch})`)
    }
    for (const b of brokers) {
      if (!b.serving) continue
      const from = b.applied
      const entries = controller.entries.slice(from, controller.committed)
      world.send(CONTROLLER_ID, b.id, () => b.applyMetadata(from, entries))
    }
  }
  let anomalies = 0
  let txn: TxnWorkload | undefined
  const clients: ClientEndpoint[] = []
  const client = (id: number): ClientEndpoint => {
    const c: { id: number; up: boolean; incarnation: number; clock?: NodeClock } = {
      id,
      up: true,
      incarnation: 0,
    }
    const endpoint = c as unknown as ClientEndpoint
    ;(c as { clock: NodeClock }).clock = new NodeClock(world, endpoint, 1, 1_700_000_000_000)
    world.endpoints.set(id, endpoint)
    clients.push(endpoint)
    return endpoint
  }
  const leaderOf = (partition: number): SimBroker | undefined => {
    const r = controller.loader.image.topicsByName.get(TOPIC)?.partitions.get(partition)
    if (r === undefined || r.leader < 0) return undefined
    return brokers[r.leader - 1]
  }
  const timeoutMs = plan.clientTimeoutMs
  let producing = true

  // ---------------------------------------------------------------- producers
  const produce = (k: number) => {
    const c = client(100 + k)
    const partition = k % plan.partitions
    const tp = `${TOPIC}-${partition}`
    let producerId = BigInt(1000 + k)
    let sequence = 0
    const backoffMs = Math.max(1, 100 * plan.timeScale)
    const attempt = () => {
      if (!producing) return
      const leader = leaderOf(partition)
      if (leader === undefined) {
        c.clock.setTimer(backoffMs, attempt)
        return
      }
      const pid = producerId
      const seq = sequence
      const batch = encodeBatch({
        records: [
          { key: null, value: Buffer.from(`p${k}-${pid}-${seq}`), timestamp: BigInt(c.clock.nowMs()) },
        ],
        producerId: pid,
        producerEpoch: 0,
        baseSequence: seq,
      })
      world
        .rpc(c.id, leader.id, c.clock, timeoutMs, async () => {
          if (leader.rm === null || !leader.serving) throw new Error('not serving')
          const [r] = await leader.rm.appendRecords([{ topic: TOPIC, partition, records: batch }], {
            acks: -1,
            timeoutMs,
          })
          return r!
        })
        .then(
          (r) => {
            if (r.errorCode === ErrorCode.None) {
              world.log(`c${c.id} ACK ${tp}@${r.baseOffset} producer ${pid} seq ${seq} (leader ${leader.id})`)
              try {
                checker.ack(tp, r.baseOffset, pid, seq, leader.id)
              } catch (e) {
                world.fail(e)
              }
              sequence++
              c.clock.setTimer(workload.nextFloat() * plan.produceGapMs, attempt)
              return
            }
            if (
              r.errorCode === ErrorCode.OutOfOrderSequenceNumber ||
              r.errorCode === ErrorCode.UnknownProducerId ||
              r.errorCode === ErrorCode.InvalidProducerEpoch
            ) {
              anomalies++
              world.log(
                `c${c.id} ANOMALY error ${r.errorCode} for producer ${pid} seq ${seq}: new producer id`,
              )
              producerId += 1_000_000n
              sequence = 0
            } else world.log(`c${c.id} produce ${tp} seq ${seq} to ${leader.id}: error ${r.errorCode}`)
            c.clock.setTimer(backoffMs, attempt)
          },
          (e: unknown) => {
            world.log(`c${c.id} produce ${tp} seq ${seq} to ${leader.id}: ${(e as Error).message}`)
            c.clock.setTimer(backoffMs, attempt)
          },
        )
    }
    c.clock.setTimer(workload.nextFloat() * 10, attempt)
  }

  // ---------------------------------------------------------------- consumers
  const positions = new Map<number, bigint>()
  const consume = (partition: number) => {
    const c = client(200 + partition)
    const tp = `${TOPIC}-${partition}`
    positions.set(partition, 0n)
    const pollMs = Math.max(1, 200 * plan.timeScale)
    const poll = () => {
      const leader = leaderOf(partition)
      if (leader === undefined) {
        c.clock.setTimer(pollMs, poll)
        return
      }
      const position = positions.get(partition)!
      world
        .rpc(c.id, leader.id, c.clock, timeoutMs, async () => {
          if (leader.rm === null || !leader.serving) throw new Error('not serving')
          const [o] = await leader.rm.fetchMessages(
            [
              {
                topic: TOPIC,
                partition,
                fetchOffset: position,
                maxBytes: 1 << 20,
                currentLeaderEpoch: -1,
                lastFetchedEpoch: -1,
              },
            ],
            { replicaId: -1, maxWaitMs: 0, minBytes: 1, maxBytes: 1 << 20, isolationLevel: 0 },
          )
          return { o: o!, leader: leader.id }
        })
        .then(
          ({ o, leader: from }) => {
            try {
              consumed(o, from, position)
            } catch (e) {
              world.fail(e)
            }
            c.clock.setTimer(pollMs, poll)
          },
          () => c.clock.setTimer(pollMs, poll),
        )
    }
    const consumed = (o: ReadOutcome, from: number, position: bigint) => {
      if (o.errorCode === ErrorCode.None && positions.get(partition) === position) {
        let at = 0
        let next = position
        while (at + 61 <= o.records.length) {
          const h = readBatchHeader(o.records, at)
          const lastOffset = h.baseOffset + BigInt(h.lastOffsetDelta)
          if (lastOffset >= o.highWatermark) {
            throw new ClusterViolation(
              ClusterInvariant.NoDivergenceBelowHighWatermark,
              `consumer of ${tp} got ${h.baseOffset}..${lastOffset} at or past the high watermark ${o.highWatermark} from ${from}`,
            )
          }
          checker.observe(
            tp,
            {
              baseOffset: h.baseOffset,
              lastOffset,
              epoch: h.partitionLeaderEpoch,
              crc: h.crc,
              producerId: h.producerId,
              baseSequence: h.baseSequence,
            },
            `consumer of broker ${from}`,
            (e) => checker.leaderOf(tp, e),
          )
          next = lastOffset + 1n
          at += 12 + h.batchLength
        }
        positions.set(partition, next)
      }
    }
    c.clock.setTimer(pollMs, poll)
  }

  // ---------------------------------------------------------------- a group committing offsets
  // One committer of a simple group (no membership) commits the consumers' positions, which only
  // grow, through the real GroupCoordinator of the group's coordinator; in turn it fetches them
  // back: a fetch must never answer less than a commit acknowledged before it was sent.
  const GROUP = 'sim-group' as GroupId
  const acknowledgedCommits = new Map<number, bigint>()
  let commitsAcknowledged = 0
  const commitGroupOffsets = () => {
    const c = client(300)
    const pollMs = Math.max(1, 300 * plan.timeScale)
    let turn = 0
    const next = () => c.clock.setTimer(pollMs, tick)
    const tick = () => {
      const topic = controller.loader.image.topicsByName.get(GROUP_METADATA_TOPIC_NAME)
      if (topic === undefined) {
        // FindCoordinator creates __consumer_offsets, as a client's first one does.
        const b = brokers.find((x) => x.serving && x.groups !== null)
        if (b !== undefined) {
          void world
            .rpc(c.id, b.id, c.clock, timeoutMs, () => b.groups!.findCoordinators(0, [GROUP], 'PLAINTEXT'))
            .catch(() => {})
        }
        next()
        return
      }
      const offsetsPartition = partitionForGroup(GROUP, topic.partitions.size)
      const leaderId = topic.partitions.get(offsetsPartition)?.leader ?? -1
      const coordinator = leaderId < 0 ? undefined : brokers[leaderId - 1]
      if (coordinator === undefined) {
        next()
        return
      }
      const otp = `${GROUP_METADATA_TOPIC_NAME}-${offsetsPartition}`
      turn++
      if (turn % 2 === 1) {
        const partition = (turn >> 1) % plan.partitions
        const offset = positions.get(partition) ?? 0n
        world
          .rpc(c.id, coordinator.id, c.clock, timeoutMs, async () => {
            if (coordinator.groups === null || !coordinator.serving) throw new Error('not serving')
            return coordinator.groups.coordinator.commitOffsets({
              groupId: GROUP,
              generationId: -1,
              memberId: '',
              groupInstanceId: null,
              retentionTimeMs: -1,
              apiVersion: 8,
              topics: [
                {
                  name: TOPIC,
                  partitions: [
                    {
                      partitionIndex: partition,
                      committedOffset: offset,
                      committedLeaderEpoch: -1,
                      commitTimestamp: -1n,
                      committedMetadata: null,
                    },
                  ],
                },
              ],
            })
          })
          .then(
            (result) => {
              const code = result[0]?.partitions?.[0]?.errorCode ?? -1
              if (code === ErrorCode.None) {
                commitsAcknowledged++
                if ((acknowledgedCommits.get(partition) ?? -1n) < offset)
                  acknowledgedCommits.set(partition, offset)
                world.log(
                  `c${c.id} COMMIT ${TOPIC}-${partition} at ${offset} (coordinator ${coordinator.id})`,
                )
              }
              next()
            },
            () => next(),
          )
        return
      }
      const before = new Map(acknowledgedCommits)
      world
        .rpc(c.id, coordinator.id, c.clock, timeoutMs, async () => {
          if (coordinator.groups === null || !coordinator.serving) throw new Error('not serving')
          return coordinator.groups.coordinator.fetchOffsets(GROUP, [
            { name: TOPIC, partitionIndexes: [...Array(plan.partitions).keys()] },
          ])
        })
        .then(
          (r) => {
            if (r.errorCode === ErrorCode.None) {
              for (const p of r.topics[0]?.partitions ?? []) {
                const acked = before.get(p.partitionIndex ?? -1)
                const got = p.committedOffset ?? -1n
                if ((p.errorCode ?? 0) !== 0 || acked === undefined || got >= acked) continue
                // Which offset held the commit is not known here: any power loss of a leader counts.
                const epoch =
                  controller.loader.image.topicsByName
                    .get(GROUP_METADATA_TOPIC_NAME)
                    ?.partitions.get(offsetsPartition)?.leaderEpoch ?? 0
                const explained = checker.powerLossExplains(otp, 1n << 62n, epoch)
                const message = `group ${GROUP} ${TOPIC}-${p.partitionIndex}: coordinator ${coordinator.id} answered ${got} after a commit of ${acked} was acknowledged`
                if (explained) {
                  checker.excusedLosses++
                  world.log(`EXCUSED (power loss) ${message}`)
                  acknowledgedCommits.set(p.partitionIndex!, got)
                  continue
                }
                world.fail(new ClusterViolation(ClusterInvariant.CommittedOffsetNeverRegresses, message))
              }
            }
            next()
          },
          () => next(),
        )
    }
    next()
  }

  // ---------------------------------------------------------------- faults
  const quietAtMs = plan.faultPhaseMs
  const randomBroker = (up: boolean) => {
    const list = brokers.filter((b) => b.up === up)
    return list.length === 0 ? undefined : list[faults.int(list.length)]
  }
  const crash = (b: SimBroker) => {
    const power = faults.nextFloat() < plan.powerLossShare
    if (power && b.rm !== null) {
      for (const p of b.rm.partitions())
        checker.powerLoss(b.id, `${p.topic}-${p.partition}`, p.log.recoveryPoint)
    }
    b.crash(power ? 'power' : 'kill', faults)
    const downMs = faults.nextFloat() * plan.faultGapMs * 3
    world.at(world.nowMs + downMs, 'restart', () => {
      if (b.up) return false
      b.log('RESTART')
      b.start()
      return true
    })
  }
  const ids = () => [CONTROLLER_ID, ...brokers.map((b) => b.id)]
  const actions: Array<[number, () => void]> = [
    [
      3,
      () => {
        const b = randomBroker(true)
        if (b !== undefined) crash(b)
      },
    ],
    [
      3,
      () => {
        const b = leaderOf(faults.int(plan.partitions))
        if (b?.up) crash(b)
      },
    ],
    [
      3,
      () => {
        const a: number[] = []
        const z: number[] = []
        for (const id of ids()) (faults.nextFloat() < 0.5 ? a : z).push(id)
        const oneWay = faults.nextFloat() < 0.3
        for (const x of a)
          for (const y of z) {
            world.block(x, y)
            if (!oneWay) world.block(y, x)
          }
        world.log(`PARTITION ${a.join(',')} ${oneWay ? '->|' : '|'} ${z.join(',')}`)
      },
    ],
    [
      2,
      () => {
        const leader = leaderOf(faults.int(plan.partitions))
        if (leader === undefined) return
        const direction = faults.int(3)
        for (const id of ids()) {
          if (id === leader.id || (id === CONTROLLER_ID && faults.nextFloat() < 0.5)) continue
          if (direction !== 2) world.block(id, leader.id)
          if (direction !== 1) world.block(leader.id, id)
        }
        world.log(`ISOLATE leader ${leader.id} (${['both', 'inbound', 'outbound'][direction]})`)
      },
    ],
    [
      4,
      () => {
        world.heal()
        world.log('HEAL')
      },
    ],
    [
      1,
      () => {
        world.network = faultNetwork(faults, plan.timeScale)
        world.log(`NETWORK ${JSON.stringify(world.network)}`)
      },
    ],
    [1, () => controller.failover(faults.nextFloat() * plan.sessionTimeoutMs)],
  ]
  const totalWeight = actions.reduce((sum, [w]) => sum + w, 0)
  const fault = () => {
    if (world.nowMs >= quietAtMs) return false
    let roll = faults.int(totalWeight)
    for (const [weight, act] of actions) {
      roll -= weight
      if (roll < 0) {
        act()
        break
      }
    }
    world.at(world.nowMs + 1 + faults.nextFloat() * 2 * plan.faultGapMs, 'fault', fault)
    return true
  }

  world.afterEvent = () => checker.check(controller, brokers)
  const result = (ok: boolean, extra: Partial<ClusterSeedResult> = {}): ClusterSeedResult => ({
    seed,
    ok,
    plan,
    events: world.events,
    simulatedMs: world.nowMs,
    acked: checker.ackCount,
    commits: commitsAcknowledged,
    crashes: brokers.reduce((n, b) => n + b.crashes, 0),
    excusedLosses: checker.excusedLosses,
    anomalies,
    transactions: { committed: txn?.committed ?? 0, aborted: txn?.aborted ?? 0 },
    traceHash: world.traceHash,
    trace: world.trace,
    ...extra,
  })

  try {
    for (const b of brokers) b.start()
    // The topic, once every broker is registered and unfenced.
    const ready = () =>
      brokers.every((b) => controller.loader.image.brokers.get(b.id as BrokerId)?.fenced === false)
    await world.runUntil(60_000, ready)
    if (!ready())
      throw new ClusterViolation(ClusterInvariant.Convergence, 'brokers never all registered and unfenced')
    const created = await createTopic(world, controller, plan)
    if (!created) throw new ClusterViolation(ClusterInvariant.Convergence, 'the topic was never created')
    world.log('TOPIC created')
    const start = world.nowMs
    for (let k = 0; k < plan.producers; k++) produce(k)
    for (let p = 0; p < plan.partitions; p++) consume(p)
    commitGroupOffsets()
    // Transactions come from their own stream, so that seeds without them replay as before.
    const txnRandom = new SeededRandom(BigInt(seed) + (8n << 40n))
    const drawn = txnRandom.nextFloat()
    if (options.transactions ?? drawn < TXN_SEED_SHARE) {
      txn = new TxnWorkload({
        world,
        topic: TOPIC,
        partitions: plan.partitions,
        timeoutMs,
        backoffMs: Math.max(1, 100 * plan.timeScale),
        gapMs: plan.produceGapMs * 5,
        random: txnRandom,
        checker,
        client,
        leaderOf,
        anomaly: () => anomalies++,
      })
      txn.start()
    }
    world.network = plan.network
    world.at(start + faults.nextFloat() * plan.faultGapMs, 'fault', fault)
    // Full disks come from their own stream, so that seeds without them replay as before.
    const diskFaults = new SeededRandom(BigInt(seed) + (7n << 40n))
    const diskFulls = diskFaults.nextFloat() < DISK_FULL_SEED_SHARE ? 1 + diskFaults.int(3) : 0
    for (let i = 0; i < diskFulls; i++) {
      world.at(start + diskFaults.nextFloat() * quietAtMs, 'disk-full', () => {
        // A broker still opening its logs would fail to start on a full disk (a startup error).
        const up = brokers.filter((b) => b.up && b.serving)
        const b = up[diskFaults.int(Math.max(1, up.length))]
        if (b === undefined) return false
        b.diskFullIncarnation = b.incarnation
        b.log('DISK FULL')
        world.at(world.nowMs + diskFaults.nextFloat() * plan.faultGapMs * 3, 'disk-free', () => {
          if (b.diskFullIncarnation === null) return false
          b.diskFullIncarnation = null
          b.log('DISK FREED')
          return true
        })
        return true
      })
    }
    const quietAt = start + quietAtMs
    await world.runUntil(quietAt)
    // Faults stop: heal, restart, calm network; producers finish what they have in flight.
    world.heal()
    world.network = CALM_NETWORK
    for (const b of brokers) b.diskFullIncarnation = null
    for (const b of brokers) if (!b.up) b.start()
    world.log('QUIET: faults stop')
    producing = false
    txn?.stop()
    const converged = () => convergence(controller, brokers, plan, txn) === null
    await world.runUntil(quietAt + plan.convergenceBoundMs, converged)
    const why = convergence(controller, brokers, plan, txn)
    if (why !== null) throw new ClusterViolation(ClusterInvariant.Convergence, why)
    await readBack(checker, controller, brokers, plan)
    if (txn !== undefined) {
      const topic = controller.loader.image.topicsByName.get(TOPIC)!
      await txn.check(
        brokers,
        (p) => topic.partitions.get(p)!.replicas,
        (p) => topic.partitions.get(p)!.leaderEpoch,
      )
    }
    return result(true)
  } catch (error) {
    if (error instanceof ClusterViolation) {
      return result(false, { invariant: error.invariant, message: error.message, atMs: world.nowMs })
    }
    const message = error instanceof Error ? (error.stack ?? error.message) : String(error)
    return result(false, { invariant: ClusterInvariant.SimulatorError, message, atMs: world.nowMs })
  }
}

async function createTopic(world: SimWorld, controller: SimController, plan: ClusterPlan): Promise<boolean> {
  let done = false
  const attempt = () => {
    if (done) return false
    controller.qc
      .createTopics({
        topics: [
          {
            name: TOPIC,
            numPartitions: plan.partitions,
            replicationFactor: plan.replicationFactor,
            assignments: [],
            configs: [{ name: 'min.insync.replicas', value: String(plan.insyncReplicasMin) }],
          },
        ],
        timeoutMs: 30_000,
        validateOnly: false,
      })
      .then(
        (r) => {
          if (r.topics?.[0]?.errorCode === ErrorCode.None) done = true
          else world.at(world.nowMs + 100, 'create topic', attempt)
        },
        () => world.at(world.nowMs + 100, 'create topic', attempt),
      )
    return true
  }
  world.at(world.nowMs, 'create topic', attempt)
  await world.runUntil(world.nowMs + 60_000, () => done && controller.loader.image.topicsByName.has(TOPIC))
  return done
}

/** Null when converged; else what is still missing. */
function convergence(
  controller: SimController,
  brokers: readonly SimBroker[],
  plan: ClusterPlan,
  txn: TxnWorkload | undefined,
): string | null {
  if (txn !== undefined && !txn.idle) return 'a transaction is not complete'
  const image = controller.loader.image
  for (const b of brokers) {
    if (!b.serving) return `broker ${b.id} not serving`
    if (image.brokers.get(b.id as BrokerId)?.fenced !== false) return `broker ${b.id} fenced`
    if (b.applied < controller.committed) return `broker ${b.id} metadata behind`
  }
  const topic = image.topicsByName.get(TOPIC)!
  for (let partition = 0; partition < plan.partitions; partition++) {
    const r = topic.partitions.get(partition)!
    const tp = `${TOPIC}-${partition}`
    if (r.leader < 0) return `${tp} has no leader`
    if (r.isr.length !== r.replicas.length) return `${tp} ISR [${r.isr}] of replicas [${r.replicas}]`
    const leader = brokers[r.leader - 1]!.rm?.getPartition(TOPIC, partition)
    if (leader === undefined || !leader.isLeader || leader.leaderEpoch !== r.leaderEpoch)
      return `${tp} leader not ready`
    if (leader.pendingIsrChange !== null) return `${tp} ISR change pending`
    const end = leader.logEndOffset
    if (leader.highWatermark !== end)
      return `${tp} leader high watermark ${leader.highWatermark} below its end ${end}`
    for (const id of r.replicas) {
      const p = brokers[id - 1]!.rm?.getPartition(TOPIC, partition)
      if (p === undefined || p.logEndOffset !== end || p.highWatermark !== end) {
        return `${tp} replica ${id} at ${p?.logEndOffset}/${p?.highWatermark}, leader at ${end}`
      }
    }
  }
  return null
}

/** After convergence: every replica equal, and every acknowledged record read back from its leader. */
async function readBack(
  checker: ClusterChecker,
  controller: SimController,
  brokers: readonly SimBroker[],
  plan: ClusterPlan,
): Promise<void> {
  const topic = controller.loader.image.topicsByName.get(TOPIC)!
  for (let partition = 0; partition < plan.partitions; partition++) {
    const r = topic.partitions.get(partition)!
    const tp = `${TOPIC}-${partition}`
    const leader = brokers[r.leader - 1]!
    const seen = new Map<bigint, { producerId: bigint; sequence: number }>()
    const once = new Map<string, bigint>()
    let offset = 0n
    for (;;) {
      const [o] = await leader.rm!.fetchMessages(
        [
          {
            topic: TOPIC,
            partition,
            fetchOffset: offset,
            maxBytes: 1 << 20,
            currentLeaderEpoch: -1,
            lastFetchedEpoch: -1,
          },
        ],
        { replicaId: -1, maxWaitMs: 0, minBytes: 0, maxBytes: 1 << 20, isolationLevel: 0 },
      )
      if (o!.errorCode !== ErrorCode.None || o!.records.length === 0) break
      let at = 0
      while (at + 61 <= o!.records.length) {
        const h = readBatchHeader(o!.records, at)
        if (isControl(h.attributes)) {
          // A transaction marker: no sequence (a retried marker may be in the log twice).
          offset = h.baseOffset + BigInt(h.lastOffsetDelta) + 1n
          at += 12 + h.batchLength
          continue
        }
        seen.set(h.baseOffset, { producerId: h.producerId, sequence: h.baseSequence })
        // Idempotence: each (producer, sequence) is in the log once, however often it was retried.
        const key = `${h.producerId}:${h.producerEpoch}:${h.baseSequence}`
        const first = once.get(key)
        if (first !== undefined && !checker.powerLossExplains(tp, first, r.leaderEpoch)) {
          throw new ClusterViolation(
            ClusterInvariant.AckedRecordNeverLost,
            `${tp}: producer ${h.producerId} seq ${h.baseSequence} is in the log twice, at ${first} and ${h.baseOffset}`,
          )
        }
        once.set(key, h.baseOffset)
        offset = h.baseOffset + BigInt(h.lastOffsetDelta) + 1n
        at += 12 + h.batchLength
      }
    }
    for (const [at, a] of checker.acked.get(tp) ?? []) {
      const s = seen.get(at)
      if (s === undefined || s.producerId !== a.producerId || s.sequence !== a.sequence) {
        if (checker.powerLossExplains(tp, at, r.leaderEpoch)) {
          // A leader lost it to a power failure, holding it unsynced (a follower's copy).
          checker.excusedLosses++
          continue
        }
        throw new ClusterViolation(
          ClusterInvariant.AckedRecordNeverLost,
          `${tp}@${at} acknowledged to producer ${a.producerId} seq ${a.sequence}, read back from leader ${leader.id}: ${s === undefined ? 'nothing' : `producer ${s.producerId} seq ${s.sequence}`}`,
        )
      }
    }
    // Below the high watermark: an append may still be in flight (its hooks ran when it was issued).
    const hw = leader.rm!.getPartition(TOPIC, partition)!.highWatermark
    const reference = leader.mirrors.get(tp)!.batches.filter((b) => b.lastOffset < hw)
    for (const id of r.replicas) {
      const mine = brokers[id - 1]!.mirrors.get(tp)!.batches.filter((b) => b.lastOffset < hw)
      const same =
        mine.length === reference.length &&
        mine.every(
          (b, i) =>
            b.baseOffset === reference[i]!.baseOffset &&
            b.crc === reference[i]!.crc &&
            b.epoch === reference[i]!.epoch,
        )
      if (!same) {
        throw new ClusterViolation(
          ClusterInvariant.Convergence,
          `${tp}: replica ${id} holds ${mine.length} batches that differ from leader ${leader.id}'s ${reference.length}`,
        )
      }
    }
  }
}

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { resolveTopicConfig } from '../config/index.ts'
import { ManualClock, SeededRandom, SimDisk } from '../io/index.ts'
import { ConfigResourceType, configKey, imageToSnapshot, MetadataLoader } from '../metadata/index.ts'
import type { BrokerId, TopicName, Uuid } from '../model/index.ts'
import {
  type AlterPartitionRequestData,
  type AlterPartitionResponseData,
  decodeBatch,
  ErrorCode,
  encodeBatch,
  encodeMetadataRecord,
  metadataRecordTypes as T,
} from '../protocol/index.ts'
import { LogManager, ReadBufferPool } from '../storage/index.ts'
import type {
  LeaderLink,
  ReplicaFetchAnswer,
  ReplicaFetchRequest,
  ReplicaFetchResponse,
} from './replica-fetcher.ts'
import { ReplicaManager } from './replica-manager.ts'

const TOPIC = 'events' as TopicName
const TOPIC_ID = Buffer.alloc(16, 7).toString('base64url') as Uuid
const b = (n: number) => n as BrokerId

async function settle(rounds = 30): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((resolve) => setImmediate(resolve))
}

function batch(n: number, prefix: string): Buffer {
  return encodeBatch({
    records: Array.from({ length: n }, (_, i) => ({
      value: Buffer.from(`${prefix}${i}`),
      timestamp: 1_000_000n,
    })),
  })
}

/**
 * Brokers on simulated disks sharing one ManualClock and one metadata log; fetchers reach a leader
 * through an in-process link that calls the leader's ReplicaManager as its Fetch and ListOffsets
 * handlers do. A link can be cut (a network partition); AlterPartition is decided by a recording
 * controller that commits the new ISR to every broker's metadata.
 */
class Cluster {
  readonly clock = new ManualClock({ nowMs: 1_000_000 })
  readonly nodes = new Map<
    number,
    { rm: ReplicaManager; manager: LogManager; loader: MetadataLoader; disk: SimDisk; pool: ReadBufferPool }
  >()
  /** Cut links: `${from}->${to}`. */
  readonly cut = new Set<string>()
  readonly alterRequests: AlterPartitionRequestData.AlterPartitionRequest[] = []
  /** While set, AlterPartition answers wait (a slow controller). */
  holdAlter: Promise<void> | null = null
  /** What the replica managers logged, as `node: message`. */
  readonly logs: string[] = []
  /** The metadata log; each broker has applied a prefix of it (a lagging one, less). */
  readonly #metadata: Array<{ kind: 'data'; offset: bigint; epoch: number; data: Buffer }> = []
  readonly #applied = new Map<number, number>()
  /** Brokers whose metadata is held back (commits reach them on `catchUp`). */
  readonly lagging = new Set<number>()
  /** `replica.fetch.backoff.ms` of nodes added from now on. */
  fetcherBackoffMs = 300

  async addNode(id: number, existing?: SimDisk): Promise<void> {
    const disk = existing ?? new SimDisk()
    if (existing === undefined) {
      await disk.mkdir('/data')
      await disk.syncDir('/')
    }
    const loader = new MetadataLoader()
    // The node's pool, as a broker's: its logs retain the appended bytes they keep, and its link
    // lends each fetched response's records from it (as WireLeaderLink's pooled frames).
    const pool = new ReadBufferPool()
    const rm: ReplicaManager = new ReplicaManager({
      nodeId: b(id),
      disk,
      clock: this.clock,
      topicConfig: (topic, image) =>
        resolveTopicConfig({
          topic: image.configs.get(configKey(ConfigResourceType.Topic, topic)) ?? new Map(),
        }),
      producerIdExpirationMs: 86_400_000,
      log: (_level, message) => this.logs.push(`${id}: ${message}`),
      replication: {
        connect: (leader) => this.#link(id, leader),
        brokerEpoch: () => BigInt(id),
        alterPartition: (req) => this.#alterPartition(req),
        fetcher: {
          fetchBytesMax: 1 << 20,
          responseBytesMax: 10 << 20,
          fetchBytesMin: 1,
          fetchWaitMsMax: 500,
          backoffMs: this.fetcherBackoffMs,
          numFetchers: 1,
        },
        lagTimeMsMax: 10_000,
        highWatermarkCheckpointIntervalMs: 5000,
        alterPartitionRetryBackoffMs: 100,
      },
    })
    const manager = await LogManager.open('/data', {
      disk,
      clock: this.clock,
      clusterId: 'c',
      nodeId: b(id),
      hooksFor: (t, p) => rm.hooksFor(t, p),
      pool,
    })
    loader.subscribe((p) => rm.onPublish(p))
    rm.start([manager])
    this.nodes.set(id, { rm, manager, loader, disk, pool })
  }

  /** A clean restart of one broker on its disk, given the committed metadata again. */
  async restartNode(id: number): Promise<void> {
    const n = this.node(id)
    await n.rm.close()
    await n.manager.close()
    const image = n.loader.image
    await this.addNode(id, n.disk)
    this.node(id).loader.loadSnapshot(imageToSnapshot(image), image.provenance)
    await this.node(id).rm.settled()
  }

  node(id: number) {
    const n = this.nodes.get(id)
    assert.ok(n !== undefined)
    return n
  }

  partition(id: number) {
    const p = this.node(id).rm.getPartition(TOPIC, 0)
    assert.ok(p !== undefined, `node ${id} hosts the partition`)
    return p
  }

  #link(from: number, leader: BrokerId): LeaderLink {
    const down = () => this.cut.has(`${from}->${leader}`)
    return {
      fetch: async (req: ReplicaFetchRequest): Promise<ReplicaFetchResponse> => {
        if (down()) throw new Error('connection refused')
        const outcomes = await this.node(leader).rm.fetchMessages(
          req.partitions.map((p) => ({
            topic: p.topic,
            partition: p.partition,
            fetchOffset: p.fetchOffset,
            maxBytes: p.maxBytes,
            currentLeaderEpoch: p.currentLeaderEpoch,
            lastFetchedEpoch: p.lastFetchedEpoch,
          })),
          {
            replicaId: req.replicaId,
            replicaEpoch: req.brokerEpoch,
            maxWaitMs: req.maxWaitMs,
            minBytes: req.minBytes,
            maxBytes: req.maxBytes,
            isolationLevel: 0,
          },
        )
        if (down()) throw new Error('connection reset')
        // The records arrive in buffers lent by the follower's pool, which lends them again once
        // released: a follower that used them after `release` (unretained) would copy other bytes.
        const pool = this.node(from).pool
        const lent: Buffer[] = []
        const answers: ReplicaFetchAnswer[] = outcomes.map((o) => {
          let records = o.records
          if (records.length > 0) {
            const buf = pool.acquire(records.length)
            records.copy(buf)
            if (pool.isLent(buf)) lent.push(buf) // not a fallback allocation
            records = buf.subarray(0, records.length)
          }
          return {
            errorCode: o.errorCode,
            highWatermark: o.highWatermark,
            logStartOffset: o.logStartOffset,
            divergingEpoch: o.divergingEpoch,
            records,
          }
        })
        let released = false
        return {
          answers,
          release: () => {
            assert.equal(released, false, 'a fetch response is released once')
            released = true
            for (const buf of lent) {
              pool.release(buf)
              // Nobody holds it any more (the log did not retain it): garbage where the bytes were.
              if (!pool.isLent(buf)) buf.fill(0xee)
            }
          },
        }
      },
      offsets: async (partitions) => {
        if (down()) throw new Error('connection refused')
        return Promise.all(
          partitions.map(async (p) => {
            const params = { currentLeaderEpoch: p.currentLeaderEpoch, isolationLevel: 0, replicaId: from }
            const e = await this.node(leader).rm.listOffset(p.topic, p.partition, {
              ...params,
              timestamp: -2n,
            })
            const l = await this.node(leader).rm.listOffset(p.topic, p.partition, {
              ...params,
              timestamp: -1n,
            })
            return { errorCode: e.errorCode || l.errorCode, logStartOffset: e.offset, logEndOffset: l.offset }
          }),
        )
      },
      close: () => {},
    }
  }

  /** The controller: the ISR as asked (validation is the controller's own test's business). */
  async #alterPartition(
    req: AlterPartitionRequestData.AlterPartitionRequest,
  ): Promise<AlterPartitionResponseData.AlterPartitionResponseIn> {
    this.alterRequests.push(req)
    if (this.holdAlter !== null) await this.holdAlter
    const partitions: AlterPartitionResponseData.PartitionDataIn[] = []
    for (const t of req.topics) {
      for (const p of t.partitions) {
        const isr = p.newIsrWithEpochs.map((m) => m.brokerId)
        const current = this.node(req.brokerId)
          .loader.image.topicsById.get(t.topicId)
          ?.partitions.get(p.partitionIndex)
        assert.ok(current !== undefined)
        if (current.partitionEpoch !== p.partitionEpoch) {
          partitions.push({ partitionIndex: p.partitionIndex, errorCode: ErrorCode.InvalidUpdateVersion })
          continue
        }
        const recovery =
          p.leaderRecoveryState !== current.leaderRecoveryState
            ? { leaderRecoveryState: p.leaderRecoveryState }
            : {}
        await this.commit(
          encodeMetadataRecord(T.PartitionChange, 0, {
            topicId: t.topicId,
            partitionId: 0,
            isr,
            ...recovery,
          }),
        )
        partitions.push({
          partitionIndex: p.partitionIndex,
          errorCode: 0,
          leaderId: current.leader,
          leaderEpoch: current.leaderEpoch,
          isr,
          partitionEpoch: current.partitionEpoch + 1,
        })
      }
    }
    return { errorCode: 0, topics: req.topics.map((t) => ({ topicId: t.topicId, partitions })) }
  }

  async commit(...records: Buffer[]): Promise<void> {
    for (const data of records)
      this.#metadata.push({ kind: 'data', offset: BigInt(this.#metadata.length), epoch: 1, data })
    for (const id of this.nodes.keys()) if (!this.lagging.has(id)) this.#applyMetadata(id)
    for (const n of this.nodes.values()) await n.rm.settled()
  }

  #applyMetadata(id: number): void {
    const from = this.#applied.get(id) ?? 0
    if (from < this.#metadata.length) this.node(id).loader.applyCommitted(this.#metadata.slice(from))
    this.#applied.set(id, this.#metadata.length)
  }

  /** A lagging broker's metadata catches up. */
  async catchUp(id: number): Promise<void> {
    this.lagging.delete(id)
    this.#applyMetadata(id)
    await this.node(id).rm.settled()
  }

  async start(
    ids: number[],
    partition: { replicas: number[]; isr: number[]; leader: number; isrMin?: number },
  ) {
    for (const id of ids) await this.addNode(id)
    await this.commit(
      ...ids.map((id) =>
        encodeMetadataRecord(T.RegisterBroker, 0, {
          brokerId: b(id),
          brokerEpoch: BigInt(id),
          incarnationId: Buffer.alloc(16, id).toString('base64url') as Uuid,
          fenced: false,
        }),
      ),
      encodeMetadataRecord(T.Topic, 0, { name: TOPIC, topicId: TOPIC_ID }),
      encodeMetadataRecord(T.Config, 0, {
        resourceType: ConfigResourceType.Topic,
        resourceName: TOPIC,
        name: 'min.insync.replicas',
        value: String(partition.isrMin ?? 1),
      }),
      encodeMetadataRecord(T.Partition, 0, {
        topicId: TOPIC_ID,
        partitionId: 0,
        replicas: partition.replicas.map(b),
        isr: partition.isr.map(b),
        leader: b(partition.leader),
        leaderEpoch: 0,
        partitionEpoch: 0,
      }),
    )
  }

  /** A new leader (and ISR) as the controller would elect; `unclean` marks it RECOVERING. */
  elect(leader: number, isr?: number[], unclean = false) {
    return this.commit(
      encodeMetadataRecord(T.PartitionChange, 0, {
        topicId: TOPIC_ID,
        partitionId: 0,
        leader: b(leader),
        ...(isr === undefined ? {} : { isr: isr.map(b) }),
        ...(unclean ? { leaderRecoveryState: 1 } : {}),
      }),
    )
  }

  /** Appends to the leader (acks=1 unless asked: acks=all waits for fetchers, so for `run`). */
  produce(id: number, records: Buffer, acks = 1) {
    return this.node(id).rm.appendRecords([{ topic: TOPIC, partition: 0, records }], {
      acks,
      timeoutMs: 30_000,
    })
  }

  /** Runs the fetchers: lets I/O settle and time pass in steps. */
  async run(ms: number, stepMs = 100): Promise<void> {
    for (let t = 0; t < ms; t += stepMs) {
      await settle()
      this.clock.advance(stepMs)
    }
    await settle()
  }

  async logBytes(id: number): Promise<Buffer> {
    const p = this.partition(id)
    const r = await p.log.read(p.logStartOffset, 64 << 20, { offsetMax: p.logEndOffset })
    assert.equal(r.errorCode, 0)
    return 'records' in r ? Buffer.from(r.records) : Buffer.alloc(0)
  }

  async close(): Promise<void> {
    for (const n of this.nodes.values()) {
      await n.rm.close()
      await n.manager.close()
    }
  }
}

describe('replica fetcher', { timeout: 120_000 }, () => {
  test('followers copy the leader byte for byte; acks=all completes once the ISR has the records', async () => {
    const c = new Cluster()
    await c.start([1, 2, 3], { replicas: [1, 2, 3], isr: [1, 2, 3], leader: 1, isrMin: 2 })
    const acked = c.produce(1, batch(5, 'a'), -1)
    let done = false
    void acked.then(() => {
      done = true
    })
    await c.run(1000)
    assert.ok(done, 'acks=all answered once the followers fetched')
    const [r] = await acked
    assert.equal(r?.errorCode, 0)
    assert.equal(r?.baseOffset, 0n)
    for (let i = 0; i < 3; i++) await c.produce(1, batch(3, `b${i}-`))
    await c.run(1500)
    const leader = await c.logBytes(1)
    assert.ok(leader.length > 0)
    assert.deepEqual(await c.logBytes(2), leader)
    assert.deepEqual(await c.logBytes(3), leader)
    assert.equal(c.partition(1).highWatermark, 14n)
    // The followers learn the high watermark from the leader, and its epochs (leader-epoch cache).
    assert.equal(c.partition(2).highWatermark, 14n)
    assert.deepEqual(c.partition(3).state.epochs.entries, [{ epoch: 0, startOffset: 0n }])
    assert.equal(c.alterRequests.length, 0, 'an ISR of caught-up followers needs no change')
    await c.close()
  })

  test("a follower's last stable offset follows the transactions and markers it replicates; as new leader it keeps the open ones and their .txnindex", async () => {
    const c = new Cluster()
    await c.start([1, 2], { replicas: [1, 2], isr: [1, 2], leader: 1 })
    const txn = (pid: bigint, prefix: string) =>
      encodeBatch({
        records: [{ value: Buffer.from(prefix), timestamp: 1_000_000n }],
        producerId: pid,
        producerEpoch: 0,
        baseSequence: 0,
        transactional: true,
      })
    const marker = (pid: bigint, committed: boolean) =>
      c.node(1).rm.appendTxnMarkers(
        [
          {
            topic: TOPIC,
            partition: 0,
            marker: { producerId: pid, producerEpoch: 0, coordinatorEpoch: 0, committed },
          },
        ],
        30_000,
      )
    await c.produce(1, txn(1n, 'a')) // 0
    await c.produce(1, txn(2n, 'b')) // 1
    await c.produce(1, batch(1, 'c')) // 2
    await c.run(500)
    assert.deepEqual([c.partition(2).highWatermark, c.partition(2).lastStableOffset], [3n, 0n])
    const aborted = marker(1n, false) // 3
    await c.run(500)
    assert.equal((await aborted)[0]!.errorCode, ErrorCode.None, 'answered once the follower has it')
    assert.deepEqual([c.partition(2).highWatermark, c.partition(2).lastStableOffset], [4n, 1n])
    // DescribeProducers on the follower answers from its own state (find-hanging asks followers).
    const onFollower = await c.node(2).rm.activeProducers(TOPIC, 0)
    assert.deepEqual(
      [onFollower.errorCode, onFollower.producers.map((p) => [p.producerId, p.currentTxnFirstOffset])],
      [
        ErrorCode.None,
        [
          [1n, -1n],
          [2n, 1n],
        ],
      ],
    )
    // The follower takes over with producer 2's transaction open, and the aborted one indexed.
    await c.elect(2, [1, 2])
    await c.run(300)
    assert.ok(c.partition(2).isLeader)
    assert.equal(c.partition(2).lastStableOffset, 1n)
    assert.deepEqual(await c.partition(2).log.collectAbortedTxns(0n, 4n), [
      { producerId: 1n, firstOffset: 0n, lastOffset: 3n, lastStableOffset: 1n },
    ])
    const committed = c.node(2).rm.appendTxnMarkers(
      [
        {
          topic: TOPIC,
          partition: 0,
          marker: { producerId: 2n, producerEpoch: 0, coordinatorEpoch: 0, committed: true },
        },
      ],
      30_000,
    )
    await c.run(500)
    assert.equal((await committed)[0]!.baseOffset, 4n)
    assert.equal(c.partition(2).lastStableOffset, 5n)
    assert.equal(c.partition(1).lastStableOffset, 5n, 'and the old leader, now following, with it')
    await c.close()
  })

  test('a follower with a divergent uncommitted tail (an older epoch) truncates it and converges', async () => {
    const c = new Cluster()
    await c.start([1, 2], { replicas: [1, 2], isr: [1, 2], leader: 1 })
    await c.produce(1, batch(4, 'committed-'))
    await c.run(600)
    assert.equal(c.partition(2).logEndOffset, 4n)
    // Broker 2 is cut off from its leader; broker 1 writes a tail in epoch 0 nobody else has.
    c.cut.add('2->1')
    await c.produce(1, batch(3, 'lost-'))
    await c.produce(1, batch(2, 'lost2-'))
    assert.equal(c.partition(1).logEndOffset, 9n)
    // The controller moves leadership to 2 (epoch 1), which writes other records at the same offsets.
    await c.elect(2, [2])
    c.cut.add('1->2')
    await c.run(200)
    assert.equal(c.partition(2).leaderEpoch, 1)
    await c.produce(2, batch(2, 'new-'))
    await c.produce(2, batch(1, 'newer-'))
    assert.equal(c.partition(2).logEndOffset, 7n)
    assert.notDeepEqual(await c.logBytes(1), await c.logBytes(2))
    // The network heals: broker 1 fetches with its last epoch 0 at offset 9; the leader answers that
    // epoch 0 ended at 4; broker 1 truncates to 4 and copies epoch 1's batches.
    c.cut.clear()
    await c.run(3000)
    assert.equal(c.partition(1).role, 'follower')
    assert.deepEqual(await c.logBytes(1), await c.logBytes(2))
    assert.equal(c.partition(1).logEndOffset, 7n)
    assert.ok(
      c.logs.includes('1: replica events-0: truncating from 9 to 4 (leader epoch 0 ends at 4)'),
      'truncated at the divergence point, not by a full reset',
    )
    assert.equal(c.partition(1).logStartOffset, 0n)
    assert.deepEqual(c.partition(1).state.epochs.entries, [
      { epoch: 0, startOffset: 0n },
      { epoch: 1, startOffset: 4n },
    ])
    // Caught up again, it is proposed back into the ISR.
    assert.deepEqual(c.partition(2).isr, [2, 1])
    await c.close()
  })

  test('a follower elected leader flushes the tail it fetched: with flush.on.ack its high watermark reaches its log end without another produce', async () => {
    const c = new Cluster()
    await c.start([1, 2], { replicas: [1, 2], isr: [1, 2], leader: 1 })
    void c.produce(1, batch(3, 'a'))
    // Broker 2 copies the records, then loses its leader before learning the high watermark.
    for (let i = 0; i < 3000 && c.partition(2).logEndOffset < 3n; i++) {
      await settle(1)
      c.clock.advance(1)
    }
    c.cut.add('2->1')
    c.cut.add('1->2')
    assert.equal(c.partition(2).logEndOffset, 3n)
    assert.equal(c.partition(2).highWatermark, 0n)
    assert.ok(c.partition(2).log.recoveryPoint < 3n, 'a follower does not flush what it fetches')
    await c.elect(2, [2])
    await c.run(1000)
    assert.equal(c.partition(2).leaderEpoch, 1)
    assert.equal(c.partition(2).highWatermark, 3n, 'found by the cluster simulation (seeds 4, 7)')
    await c.close()
  })

  test('a follower that lags past replica.lag.time.max.ms is proposed out; back in once caught up', async () => {
    const c = new Cluster()
    await c.start([1, 2, 3], { replicas: [1, 2, 3], isr: [1, 2, 3], leader: 1, isrMin: 2 })
    await c.produce(1, batch(2, 'x'))
    await c.run(600)
    c.cut.add('3->1')
    await c.produce(1, batch(2, 'y'))
    await c.run(5000)
    assert.deepEqual(c.partition(1).isr, [1, 2, 3], 'not yet lagging for 10 s')
    await c.run(11_000) // the lag check runs every half replica.lag.time.max.ms
    assert.deepEqual(c.partition(1).isr, [1, 2])
    const shrink = c.alterRequests.at(-1)?.topics[0]?.partitions[0]
    assert.deepEqual(
      shrink?.newIsrWithEpochs.map((m) => [m.brokerId, m.brokerEpoch]),
      [
        [1, -1n],
        [2, 2n],
      ],
      'members carry the broker epoch of their fetches (KIP-841)',
    )
    c.cut.clear()
    await c.run(3000)
    assert.deepEqual(c.partition(1).isr, [1, 2, 3])
    assert.deepEqual(await c.logBytes(3), await c.logBytes(1))
    const totals = c.node(1).rm.stats.totals
    assert.deepEqual([totals.isrShrinks, totals.isrExpands], [1, 1], "the leader's accepted changes, counted")
    assert.ok(totals.replicationBytesOut > 0 && c.node(2).rm.stats.totals.replicationBytesIn > 0)
    await c.close()
  })

  test('acks=all: NOT_ENOUGH_REPLICAS below min ISR, NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrinks meanwhile', async () => {
    const c = new Cluster()
    await c.start([1, 2, 3], { replicas: [1, 2, 3], isr: [1, 2, 3], leader: 1, isrMin: 2 })
    await c.produce(1, batch(1, 'a'))
    await c.run(600)
    c.cut.add('2->1')
    c.cut.add('3->1')
    const waiting = c.produce(1, batch(1, 'b'), -1)
    let answer: Awaited<typeof waiting> | null = null
    void waiting.then((a) => {
      answer = a
    })
    await c.run(16_000)
    assert.deepEqual(c.partition(1).isr, [1])
    assert.equal(
      (answer as Awaited<typeof waiting> | null)?.[0]?.errorCode,
      ErrorCode.NotEnoughReplicasAfterAppend,
    )
    const [refused] = await c.produce(1, batch(1, 'c'), -1)
    assert.equal(refused?.errorCode, ErrorCode.NotEnoughReplicas)
    // Consumers never read past the high watermark: the unreplicated 'b' is below the log end only.
    assert.equal(c.partition(1).highWatermark, c.partition(1).logEndOffset)
    await c.close()
  })

  test('the high watermark is checkpointed (replication-offset-checkpoint) and read back at start', async () => {
    const c = new Cluster()
    await c.start([1, 2], { replicas: [1, 2], isr: [1, 2], leader: 1 })
    await c.produce(1, batch(6, 'h'))
    await c.run(1200)
    assert.equal(c.partition(2).highWatermark, 6n)
    await c.run(5000)
    const text = (await c.node(2).disk.readFile('/data/replication-offset-checkpoint')).toString()
    assert.equal(text, '0\n1\nevents 0 6\n')
    // Restarted and cut off from its leader, the follower starts from its checkpointed high watermark.
    c.cut.add('2->1')
    await c.restartNode(2)
    assert.equal(c.partition(2).role, 'follower')
    assert.equal(c.partition(2).highWatermark, 6n)
    await c.close()
  })

  test("OFFSET_OUT_OF_RANGE: a follower behind the leader's log start restarts there, then joins the ISR", async () => {
    const c = new Cluster()
    c.cut.add('2->1')
    await c.start([1, 2], { replicas: [1, 2], isr: [1], leader: 1 })
    for (let i = 0; i < 4; i++) await c.produce(1, batch(5, `r${i}-`))
    await c.run(100)
    assert.equal(c.partition(1).highWatermark, 20n)
    assert.equal((await c.node(1).rm.deleteRecords(TOPIC, 0, 15n)).errorCode, 0)
    c.cut.clear()
    await c.run(3000)
    assert.ok(
      c.logs.some((l) => l.startsWith("2: replica events-0: restarting at the leader's log start 15")),
    )
    assert.equal(c.partition(2).logStartOffset, 15n)
    assert.equal(c.partition(2).logEndOffset, 20n)
    assert.deepEqual(await c.logBytes(2), await c.logBytes(1))
    assert.deepEqual(c.partition(1).isr, [1, 2])
    await c.close()
  })

  test("while an expansion is pending, the high watermark counts the larger ISR (Kafka's maximal ISR)", async () => {
    const c = new Cluster()
    c.cut.add('3->1')
    await c.start([1, 2, 3], { replicas: [1, 2, 3], isr: [1, 2], leader: 1 })
    await c.produce(1, batch(4, 'a'))
    await c.run(1000)
    assert.equal(c.partition(1).highWatermark, 4n)
    let release = () => {}
    c.holdAlter = new Promise<void>((resolve) => {
      release = resolve
    })
    c.cut.clear()
    await c.run(1000)
    assert.deepEqual(c.partition(1).pendingIsrChange?.isr, [1, 2, 3], 'broker 3 caught up: expansion sent')
    assert.deepEqual(c.partition(1).isr, [1, 2])
    // Broker 3 falls behind again before the controller answers: the high watermark waits for it.
    c.cut.add('3->1')
    await c.produce(1, batch(2, 'b'))
    await c.run(1000)
    assert.equal(c.partition(2).logEndOffset, 6n)
    assert.equal(c.partition(1).highWatermark, 4n, 'broker 3 (pending member) has only 4')
    release()
    c.holdAlter = null
    c.cut.clear()
    await c.run(1500)
    assert.deepEqual(c.partition(1).isr, [1, 2, 3])
    assert.equal(c.partition(1).highWatermark, 6n)
    await c.close()
  })

  test("an uncleanly elected leader reports its recovery (KIP-704); the old leader's tail is cut to match", async () => {
    const c = new Cluster()
    c.cut.add('2->1')
    await c.start([1, 2], { replicas: [1, 2], isr: [1], leader: 1 })
    await c.produce(1, batch(3, 'only-on-1-'))
    await c.run(100)
    c.cut.add('1->2')
    await c.elect(2, [2], true)
    await c.run(200)
    const reg = c.node(1).loader.image.topicsById.get(TOPIC_ID)!.partitions.get(0)!
    assert.equal(reg.leaderRecoveryState, 0, 'the new leader reported RECOVERED')
    assert.equal(c.partition(2).isRecovering, false)
    await c.produce(2, batch(2, 'on-2-'))
    c.cut.clear()
    await c.run(3000)
    // Unclean: what only broker 1 had is gone; both now hold broker 2's log.
    assert.deepEqual(await c.logBytes(1), await c.logBytes(2))
    assert.equal(c.partition(1).logEndOffset, 2n)
    assert.deepEqual(c.partition(2).isr, [2, 1])
    await c.close()
  })

  test('FENCED_LEADER_EPOCH and UNKNOWN_LEADER_EPOCH: the fetcher waits for metadata, then resumes', async () => {
    const c = new Cluster()
    c.fetcherBackoffMs = 5000
    await c.start([1, 2], { replicas: [1, 2], isr: [1, 2], leader: 1 })
    await c.produce(1, batch(2, 'a'))
    await c.run(600)
    assert.equal(c.partition(2).logEndOffset, 2n)
    // The leader moves to epoch 1; broker 2's metadata lags: its fetches carry epoch 0 and are fenced.
    c.lagging.add(2)
    await c.elect(1)
    await c.produce(1, batch(3, 'b'))
    await c.run(3000)
    assert.ok(c.logs.some((l) => l.startsWith('2: replica events-0: epoch 0 is fenced by leader 1')))
    assert.equal(c.partition(2).logEndOffset, 2n, 'nothing fetched in a fenced epoch')
    await c.catchUp(2)
    await c.run(1000)
    assert.equal(c.partition(2).logEndOffset, 5n)
    // Now the leader's metadata lags: broker 2 asks in epoch 2, which the leader does not know yet.
    c.lagging.add(1)
    await c.elect(1)
    await c.run(100)
    assert.equal(c.partition(2).leaderEpoch, 2)
    assert.equal(c.partition(1).leaderEpoch, 1)
    await c.produce(1, batch(1, 'c'))
    await c.run(2000)
    assert.equal(c.partition(2).logEndOffset, 5n, 'UNKNOWN_LEADER_EPOCH: backing off')
    await c.catchUp(1)
    await c.produce(1, batch(1, 'd'))
    await c.run(200)
    assert.equal(
      c.partition(2).logEndOffset,
      7n,
      'asked again within a short retry once the leader caught up, not after the 5 s backoff',
    )
    assert.deepEqual(await c.logBytes(2), await c.logBytes(1))
    await c.close()
  })

  test('a new topic whose leader has not applied it yet: the follower asks again within a short retry, not after the backoff', async () => {
    const c = new Cluster()
    c.fetcherBackoffMs = 5000
    // The leader's metadata lags: the follower's first fetches find no such partition there.
    c.lagging.add(1)
    await c.start([1, 2], { replicas: [1, 2], isr: [1, 2], leader: 1 })
    await c.run(150)
    assert.equal(c.partition(2).isLeader, false, 'broker 2 follows')
    await c.catchUp(1)
    await c.produce(1, batch(3, 'a'))
    await c.run(400)
    assert.equal(c.partition(2).logEndOffset, 3n, 'fetched once the leader had the partition')
    assert.deepEqual(await c.logBytes(2), await c.logBytes(1))
    await c.close()
  })

  // Seed 1 once spun: a replica that led an epoch without writing kept that epoch at its log end.
  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
    test(`random cuts and clean leader changes: no acknowledged record is lost, replicas converge (seed ${seed})`, async () => {
      const random = new SeededRandom(seed)
      const c = new Cluster()
      await c.start([1, 2, 3], { replicas: [1, 2, 3], isr: [1, 2, 3], leader: 1, isrMin: 2 })
      const acked = new Map<bigint, string>()
      const inFlight: Promise<void>[] = []
      /** HighWatermarkMonotonic: per (leader, epoch), the high watermark never moves back. */
      const seenHw = new Map<string, bigint>()
      const registration = () => c.node(1).loader.image.topicsById.get(TOPIC_ID)!.partitions.get(0)!
      let n = 0
      for (let step = 0; step < 40; step++) {
        const action = random.int(10)
        const reg = registration()
        if (action < 5 && reg.leader > 0) {
          const values = Array.from({ length: 1 + random.int(3) }, () => `s${seed}-${n++}`)
          const records = encodeBatch({
            records: values.map((v) => ({ value: Buffer.from(v), timestamp: 1n })),
          })
          inFlight.push(
            c.produce(reg.leader, records, -1).then(([r]) => {
              if (r?.errorCode !== 0) return
              for (const [i, v] of values.entries()) acked.set(r.baseOffset + BigInt(i), v)
            }),
          )
        } else if (action < 7) {
          const from = 1 + random.int(3)
          const to = 1 + random.int(3)
          if (from !== to) c.cut.add(`${from}->${to}`)
        } else if (action < 8) {
          c.cut.clear()
        } else {
          // A clean election: another member of the ISR leads (as when the controller fences the leader).
          const candidates = reg.isr.filter((id) => id !== reg.leader)
          if (candidates.length > 0) await c.elect(candidates[random.int(candidates.length)]!)
        }
        await c.run(100 + random.int(3000))
        for (const id of [1, 2, 3]) {
          const p = c.partition(id)
          if (!p.isLeader) continue
          const key = `${id}@${p.leaderEpoch}`
          const before = seenHw.get(key) ?? -1n
          assert.ok(p.highWatermark >= before, `seed ${seed}: HW of ${key} moved back`)
          seenHw.set(key, p.highWatermark)
        }
      }
      c.cut.clear()
      await c.run(30_000)
      await Promise.all(inFlight)
      const leader = registration().leader
      assert.ok(leader > 0)
      const bytes = await c.logBytes(leader)
      for (const id of [1, 2, 3])
        assert.deepEqual(await c.logBytes(id), bytes, `seed ${seed}: replica ${id} converged`)
      const log = new Map<bigint, string>()
      for (let at = 0; at < bytes.length; ) {
        const d = decodeBatch(bytes, at)
        for (const r of d.records) log.set(r.offset, r.value?.toString() ?? '')
        at += 12 + d.header.batchLength
      }
      assert.ok(acked.size > 0, `seed ${seed}: something was acknowledged`)
      for (const [offset, value] of acked)
        assert.equal(log.get(offset), value, `seed ${seed}: acked offset ${offset}`)
      assert.deepEqual([...registration().isr].sort(), [1, 2, 3])
      await c.close()
    })
  }
})

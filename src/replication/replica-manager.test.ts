import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { resolveTopicConfig } from '../config/index.ts'
import { ManualClock, SimDisk } from '../io/index.ts'
import { ConfigResourceType, configKey, imageToSnapshot, MetadataLoader } from '../metadata/index.ts'
import type { BrokerId, TopicName, Uuid } from '../model/index.ts'
import {
  decodeBatch,
  ErrorCode,
  encodeBatch,
  encodeMetadataRecord,
  LOG_OVERHEAD,
  metadataRecordTypes as T,
} from '../protocol/index.ts'
import { LogManager, writeOffsetCheckpoint } from '../storage/index.ts'
import { ReplicaManager } from './replica-manager.ts'

const NODE = 1 as BrokerId
const DIR = '/data'
const TOPIC = 'events' as TopicName
const TOPIC_ID = Buffer.alloc(16, 7).toString('base64url') as Uuid

/** Lets pending promise callbacks (and simulated disk operations) run. */
async function settle(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((resolve) => setImmediate(resolve))
}

function batch(
  n: number,
  options: {
    prefix?: string
    ts?: number
    producerId?: bigint
    seq?: number
    epoch?: number
    transactional?: boolean
  } = {},
): Buffer {
  return encodeBatch({
    records: Array.from({ length: n }, (_, i) => ({
      key: Buffer.from(`k${i}`),
      value: Buffer.from(`${options.prefix ?? 'v'}${i}`),
      timestamp: BigInt(options.ts ?? 1_000_000),
    })),
    ...(options.producerId !== undefined
      ? { producerId: options.producerId, producerEpoch: options.epoch ?? 0, baseSequence: options.seq ?? 0 }
      : {}),
    ...(options.transactional === true ? { transactional: true } : {}),
  })
}

function values(records: Buffer): string[] {
  const out: string[] = []
  for (let at = 0; at < records.length; ) {
    const b = decodeBatch(records, at)
    for (const r of b.records) out.push(r.value?.toString() ?? '')
    at += LOG_OVERHEAD + records.readInt32BE(at + 8)
  }
  return out
}

/** A node's metadata, log directory and replica manager on a simulated disk and clock. */
class Harness {
  readonly disk: SimDisk
  readonly clock: ManualClock
  readonly loader = new MetadataLoader()
  #offset = 0n
  rm!: ReplicaManager
  manager!: LogManager

  constructor(disk = new SimDisk(), clock = new ManualClock({ nowMs: 1_000_000 })) {
    this.disk = disk
    this.clock = clock
  }

  static async create(): Promise<Harness> {
    const h = new Harness()
    await h.disk.mkdir(DIR)
    await h.disk.syncDir('/')
    await h.open()
    return h
  }

  /** Opens the log directory and a replica manager on it (as a node starting). */
  async open(): Promise<void> {
    this.rm = new ReplicaManager({
      nodeId: NODE,
      disk: this.disk,
      clock: this.clock,
      topicConfig: (topic, image) =>
        resolveTopicConfig({
          topic: image.configs.get(configKey(ConfigResourceType.Topic, topic)) ?? new Map(),
        }),
      producerIdExpirationMs: 86_400_000,
    })
    this.manager = await LogManager.open(DIR, {
      disk: this.disk,
      clock: this.clock,
      clusterId: 'c',
      nodeId: NODE,
      hooksFor: (t, p) => this.rm.hooksFor(t, p),
    })
    this.loader.subscribe((p) => this.rm.onPublish(p))
    this.rm.start([this.manager])
    await this.rm.settled()
  }

  /** A restart: the same disk and the same metadata, a new manager. */
  async restart(crash = false): Promise<void> {
    if (crash) this.disk.crash()
    else {
      await this.rm.close()
      await this.manager.close()
    }
    const image = this.loader.image
    const loader = new MetadataLoader()
    ;(this as { loader: MetadataLoader }).loader = loader
    await this.open()
    // Replay the committed image into the new loader (a snapshot, as a restarting node would).
    loader.loadSnapshot(imageToSnapshot(image), image.provenance)
    await this.rm.settled()
  }

  async commit(...records: Buffer[]): Promise<void> {
    this.loader.applyCommitted(
      records.map((data) => ({ kind: 'data' as const, offset: this.#offset++, epoch: 1, data })),
    )
    await this.rm.settled()
  }

  createTopic(options: { replicas?: number[]; isr?: number[]; configs?: Record<string, string> } = {}) {
    const replicas = (options.replicas ?? [1]) as BrokerId[]
    return this.commit(
      encodeMetadataRecord(T.Topic, 0, { name: TOPIC, topicId: TOPIC_ID }),
      ...Object.entries(options.configs ?? {}).map(([name, value]) =>
        encodeMetadataRecord(T.Config, 0, {
          resourceType: ConfigResourceType.Topic,
          resourceName: TOPIC,
          name,
          value,
        }),
      ),
      encodeMetadataRecord(T.Partition, 0, {
        topicId: TOPIC_ID,
        partitionId: 0,
        replicas,
        isr: (options.isr ?? replicas) as BrokerId[],
        leader: NODE,
        leaderEpoch: 0,
        partitionEpoch: 0,
      }),
    )
  }

  /** A leader record naming this node again: the leader epoch moves on. */
  bumpLeaderEpoch(isr?: number[]) {
    return this.commit(
      encodeMetadataRecord(T.PartitionChange, 0, {
        topicId: TOPIC_ID,
        partitionId: 0,
        leader: NODE,
        ...(isr !== undefined ? { isr: isr as BrokerId[] } : {}),
      }),
    )
  }

  produce(records: Buffer, acks = -1, timeoutMs = 30_000) {
    return this.rm.appendRecords([{ topic: TOPIC, partition: 0, records }], { acks, timeoutMs })
  }

  fetch(
    fetchOffset: bigint,
    options: { maxWaitMs?: number; minBytes?: number; maxBytes?: number; isolationLevel?: number } = {},
  ) {
    return this.rm.fetchMessages(
      [
        {
          topic: TOPIC,
          partition: 0,
          fetchOffset,
          maxBytes: options.maxBytes ?? 1 << 20,
          currentLeaderEpoch: -1,
          lastFetchedEpoch: -1,
        },
      ],
      {
        replicaId: -1,
        maxWaitMs: options.maxWaitMs ?? 0,
        minBytes: options.minBytes ?? 1,
        maxBytes: options.maxBytes ?? 1 << 20,
        isolationLevel: options.isolationLevel ?? 0,
      },
    )
  }

  /** WriteTxnMarkers' append of one marker to partition 0. */
  async marker(
    producerId: bigint,
    committed: boolean,
    options: { epoch?: number; coordinatorEpoch?: number } = {},
  ) {
    const marker = {
      producerId,
      producerEpoch: options.epoch ?? 0,
      coordinatorEpoch: options.coordinatorEpoch ?? 0,
      committed,
    }
    return (await this.rm.appendTxnMarkers([{ topic: TOPIC, partition: 0, marker }], 30_000))[0]!
  }

  /** ListOffsets latest (-1) under `isolationLevel`. */
  async latest(isolationLevel: number): Promise<bigint> {
    const r = await this.rm.listOffset(TOPIC, 0, {
      timestamp: -1n,
      currentLeaderEpoch: -1,
      isolationLevel,
      replicaId: -1,
    })
    return r.offset
  }

  /** Follower `replicaId`'s fetch from offset 0 of partition 0 of each of `topics`. */
  followerFetch(replicaId: number, topics: readonly TopicName[], maxWaitMs = 500) {
    return this.rm.fetchMessages(
      topics.map((topic) => ({
        topic,
        partition: 0,
        fetchOffset: 0n,
        maxBytes: 1000,
        currentLeaderEpoch: 0,
        lastFetchedEpoch: -1,
      })),
      { replicaId, maxWaitMs, minBytes: 1, maxBytes: 1000, isolationLevel: 0 },
    )
  }

  /** A new topic (id bytes `idByte`) whose one partition is led here, all of `replicas` in its ISR. */
  ledHere(name: TopicName, idByte: number, replicas: number[]) {
    const topicId = Buffer.alloc(16, idByte).toString('base64url') as Uuid
    return this.commit(
      encodeMetadataRecord(T.Topic, 0, { name, topicId }),
      encodeMetadataRecord(T.Partition, 0, {
        topicId,
        partitionId: 0,
        replicas: replicas as BrokerId[],
        isr: replicas as BrokerId[],
        leader: NODE,
        leaderEpoch: 0,
        partitionEpoch: 0,
      }),
    )
  }

  get partition() {
    const p = this.rm.getPartition(TOPIC, 0)
    assert.ok(p !== undefined, 'the partition is hosted')
    return p
  }
}

function pending<T>(p: Promise<T>): { value: T | undefined; done: boolean } {
  const t: { value: T | undefined; done: boolean } = { value: undefined, done: false }
  void p.then((v) => {
    t.value = v
    t.done = true
  })
  return t
}

describe('replica manager', () => {
  test("a log's write tail is the broker's 12 MiB where followers fetch from it, 1 MiB where none do", async () => {
    const alone = await Harness.create()
    await alone.createTopic()
    assert.equal(alone.partition.log.tailBytesMax, 1024 * 1024)
    const replicated = await Harness.create()
    await replicated.createTopic({ replicas: [1, 2, 3], isr: [1, 2, 3] })
    assert.equal(replicated.partition.isLeader, true)
    assert.equal(replicated.partition.log.tailBytesMax, 12 * 1024 * 1024)
  })

  test('a disk error on a partition file takes its log dir offline (KAFKA_STORAGE_ERROR); once the disk takes writes the partition is rebuilt and leads again with everything', async () => {
    const h = await Harness.create()
    await h.createTopic()
    assert.equal((await h.produce(batch(2)))[0]!.errorCode, ErrorCode.None)
    // The disk fills up: the new epoch's leader-epoch-checkpoint cannot be written.
    h.disk.setHook((op) => (op === 'append' || op === 'write' ? 'ENOSPC' : undefined))
    await h.bumpLeaderEpoch()
    await settle()
    assert.equal(h.manager.isOffline, true)
    assert.equal((await h.produce(batch(1)))[0]!.errorCode, ErrorCode.KafkaStorageError)
    assert.equal((await h.fetch(0n))[0]!.errorCode, ErrorCode.KafkaStorageError)
    assert.equal(h.rm.describeLogDirs()[0]!.offline, true)
    h.disk.setHook(null)
    for (let i = 0; i < 50 && h.manager.isOffline; i++) {
      h.clock.advance(1_000)
      await settle()
    }
    assert.equal(h.manager.state, 'online')
    await h.rm.settled()
    const p = h.partition
    assert.equal(p.isLeader, true)
    assert.equal(p.leaderEpoch, 1)
    assert.equal(p.log, h.manager.getLog(TOPIC, 0), 'rebuilt on the re-opened log')
    assert.equal((await h.produce(batch(1, { prefix: 'after' })))[0]!.errorCode, ErrorCode.None)
    assert.deepEqual(values((await h.fetch(0n))[0]!.records), ['v0', 'v1', 'after0'])
    assert.equal(h.rm.describeLogDirs()[0]!.offline, false)
  })

  test('a checkpointed high watermark past the log end is rewritten as the log end before the partition takes writes', async () => {
    const h = await Harness.create()
    await h.createTopic()
    await h.produce(batch(3))
    assert.equal(h.partition.highWatermark, 3n)
    await h.rm.close()
    await h.manager.close()
    // As after a power loss that cut the log below a high watermark checkpointed earlier.
    await writeOffsetCheckpoint(h.disk, `${DIR}/replication-offset-checkpoint`, [
      { topic: TOPIC, partition: 0, offset: 50n },
    ])
    const image = h.loader.image
    const loader = new MetadataLoader()
    ;(h as { loader: MetadataLoader }).loader = loader
    await h.open()
    loader.loadSnapshot(imageToSnapshot(image), image.provenance)
    await h.rm.settled()
    assert.equal(h.partition.highWatermark, 3n)
    assert.equal(
      (await h.disk.readFile(`${DIR}/replication-offset-checkpoint`)).toString(),
      `0\n1\n${TOPIC} 0 3\n`,
      'the file no longer claims offsets a new history would write',
    )
  })

  test('reconciles to metadata: a partition led here gets its log, partition.metadata and epoch checkpoint', async () => {
    const h = await Harness.create()
    await h.createTopic()
    const p = h.partition
    assert.equal(p.isLeader, true)
    assert.equal(p.leaderEpoch, 0)
    const dir = `${DIR}/${TOPIC}-0`
    assert.equal(
      (await h.disk.readFile(`${dir}/partition.metadata`)).toString(),
      `version: 0\ntopic_id: ${TOPIC_ID}\n`,
    )
    assert.equal((await h.disk.readFile(`${dir}/leader-epoch-checkpoint`)).toString(), '0\n1\n0 0\n')
  })

  test('a produce that arrives while a partition led here is still being opened waits for it (no NOT_LEADER_OR_FOLLOWER)', async () => {
    const h = await Harness.create()
    // The image names this node the leader at once; the log is opened by the reconciliation after.
    const created = h.createTopic()
    assert.equal(h.rm.getPartition(TOPIC, 0), undefined, 'not hosted yet')
    const [acks1] = await h.produce(batch(3), 1)
    assert.equal(acks1!.errorCode, ErrorCode.None)
    assert.equal(acks1!.baseOffset, 0n)
    await created
    // A partition led elsewhere is still answered at once.
    await h.commit(
      encodeMetadataRecord(T.PartitionChange, 0, {
        topicId: TOPIC_ID,
        partitionId: 0,
        leader: 2 as BrokerId,
      }),
    )
    const [elsewhere] = await h.produce(batch(1), 1)
    assert.equal(elsewhere!.errorCode, ErrorCode.NotLeaderOrFollower)
  })

  test('acks=-1 answers once the batch is fsynced (flush.on.ack) and the high watermark passed it', async () => {
    const h = await Harness.create()
    await h.createTopic()
    let release: (() => void) | null = null
    h.disk.setHook((op) =>
      op === 'sync' ? new Promise<undefined>((resolve) => (release = () => resolve(undefined))) : undefined,
    )
    const produced = pending(h.produce(batch(3)))
    await settle()
    assert.equal(produced.done, false, 'waits for the fsync')
    assert.equal(h.partition.logEndOffset, 3n, 'written, readable by followers')
    assert.equal(h.partition.highWatermark, 0n, 'not visible to consumers before it is durable')
    const consumer = await h.fetch(0n)
    assert.equal(consumer[0]!.records.length, 0)
    h.disk.setHook(null)
    ;(release as (() => void) | null)?.()
    await settle()
    assert.equal(produced.done, true)
    assert.equal(produced.value![0]!.errorCode, ErrorCode.None)
    assert.equal(produced.value![0]!.baseOffset, 0n)
    assert.equal(h.partition.highWatermark, 3n)
    assert.deepEqual(values((await h.fetch(0n))[0]!.records), ['v0', 'v1', 'v2'])
  })

  test('a long poll waits on the partition, wakes on the append, and expires on the clock', async () => {
    const h = await Harness.create()
    await h.createTopic()
    const waiting = pending(h.fetch(0n, { maxWaitMs: 500 }))
    await settle()
    assert.equal(waiting.done, false)
    await h.produce(batch(2), 1)
    await settle()
    assert.equal(waiting.done, true, 'woken by the high watermark moving')
    assert.deepEqual(values(waiting.value![0]!.records), ['v0', 'v1'])

    const idle = pending(h.fetch(2n, { maxWaitMs: 500 }))
    await settle()
    h.clock.advance(499)
    await settle()
    assert.equal(idle.done, false)
    h.clock.advance(1)
    await settle()
    assert.equal(idle.done, true)
    assert.equal(idle.value![0]!.errorCode, ErrorCode.None)
    assert.equal(idle.value![0]!.records.length, 0)
    assert.equal(h.clock.timersPending, 1, 'only the producer-expiry timer is left')
  })

  test('minBytes: a fetch waits until enough bytes are estimated to be there', async () => {
    const h = await Harness.create()
    await h.createTopic()
    const one = batch(1).length
    const waiting = pending(h.fetch(0n, { maxWaitMs: 10_000, minBytes: one * 2 + 1 }))
    await h.produce(batch(1), 1)
    await settle()
    assert.equal(waiting.done, false, 'one batch is not enough')
    await h.produce(batch(1), 1)
    await h.produce(batch(1), 1)
    await settle()
    assert.equal(waiting.done, true)
    assert.equal(values(waiting.value![0]!.records).length, 3)
  })

  test('fetch limits: partition max bytes, and the first batch whole even when larger', async () => {
    const h = await Harness.create()
    await h.createTopic()
    await h.produce(batch(5, { prefix: 'a' }))
    await h.produce(batch(5, { prefix: 'b' }))
    const size = batch(5).length
    const small = await h.fetch(0n, { maxBytes: 10 })
    assert.equal(small[0]!.records.length, size, 'one whole batch although larger than maxBytes')
    const two = await h.fetch(0n, { maxBytes: size * 2 })
    assert.equal(two[0]!.records.length, size * 2)
    const beyond = await h.fetch(11n)
    assert.equal(beyond[0]!.errorCode, ErrorCode.OffsetOutOfRange)
    assert.equal(beyond[0]!.highWatermark, -1n)
  })

  test('idempotent producers: a retry answers its first offsets, a gap is refused, across a restart', async () => {
    const h = await Harness.create()
    await h.createTopic()
    const pid = 42n
    assert.equal((await h.produce(batch(3, { producerId: pid, seq: 0 })))[0]!.baseOffset, 0n)
    assert.equal((await h.produce(batch(2, { producerId: pid, seq: 3 })))[0]!.baseOffset, 3n)
    const retry = await h.produce(batch(3, { producerId: pid, seq: 0 }))
    assert.equal(retry[0]!.errorCode, ErrorCode.None)
    assert.equal(retry[0]!.baseOffset, 0n, 'the original offsets')
    assert.equal(h.partition.logEndOffset, 5n, 'nothing appended twice')
    const gap = await h.produce(batch(1, { producerId: pid, seq: 9 }))
    assert.equal(gap[0]!.errorCode, ErrorCode.OutOfOrderSequenceNumber)
    assert.equal(gap[0]!.logStartOffset, 0n, "a refusal of the records carries the log start, as Kafka's")
    const corrupt = batch(1)
    corrupt[corrupt.length - 1]! ^= 0xff
    assert.deepEqual(
      [(await h.produce(corrupt))[0]!.errorCode, (await h.produce(corrupt))[0]!.logStartOffset],
      [ErrorCode.CorruptMessage, -1n],
      'a corrupt batch does not (Kafka answers UNKNOWN_LOG_APPEND_INFO)',
    )
    assert.equal(
      (await h.produce(batch(1, { producerId: pid, seq: 0, epoch: -5 })))[0]!.errorCode,
      ErrorCode.InvalidProducerEpoch,
    )

    await h.restart()
    assert.ok(
      (await h.disk.list(`${DIR}/${TOPIC}-0`)).includes('00000000000000000005.snapshot'),
      'a clean shutdown writes a snapshot at the log end',
    )
    const again = await h.produce(batch(2, { producerId: pid, seq: 3 }))
    assert.equal(again[0]!.baseOffset, 3n, 'the retry is still recognised after a restart')
    assert.equal((await h.produce(batch(1, { producerId: pid, seq: 5 })))[0]!.baseOffset, 5n)
  })

  test('a segment roll writes a producer snapshot at the new segment; a crash replays only after it', async () => {
    const h = await Harness.create()
    await h.createTopic({ configs: { 'segment.bytes': '1000' } })
    for (let i = 0; i < 6; i++)
      await h.produce(batch(4, { producerId: 9n, seq: i * 4, prefix: 'x'.repeat(60) }))
    const names = await h.disk.list(`${DIR}/${TOPIC}-0`)
    const segments = names.filter((n) => n.endsWith('.log'))
    const snapshots = names.filter((n) => n.endsWith('.snapshot'))
    assert.ok(segments.length > 2, `rolled: ${names.join(' ')}`)
    assert.equal(snapshots.length, 2, 'the newest two snapshots are kept')
    assert.ok(
      snapshots.every((n) => segments.includes(n.replace('.snapshot', '.log'))),
      'at segment bases',
    )
    await h.restart(true)
    assert.equal((await h.produce(batch(4, { producerId: 9n, seq: 20 })))[0]!.baseOffset, 20n, 'a retry')
    assert.equal((await h.produce(batch(1, { producerId: 9n, seq: 24 })))[0]!.baseOffset, 24n)
  })

  test('after a crash, producer state is rebuilt from the log and the epoch cache from its file', async () => {
    const h = await Harness.create()
    await h.createTopic()
    await h.produce(batch(2, { producerId: 7n, seq: 0 }))
    await h.bumpLeaderEpoch()
    await h.produce(batch(2, { producerId: 7n, seq: 2 }))
    await h.restart(true)
    const p = h.partition
    assert.equal(p.logEndOffset, 4n, 'acks=-1 writes were durable')
    assert.deepEqual(
      p.state.epochs.entries.map((e) => [e.epoch, e.startOffset]),
      [
        [0, 0n],
        [1, 2n],
      ],
    )
    assert.equal((await h.produce(batch(2, { producerId: 7n, seq: 2 })))[0]!.baseOffset, 2n)
    assert.equal((await h.produce(batch(1, { producerId: 7n, seq: 4 })))[0]!.baseOffset, 4n)
  })

  test('leader epochs: each new epoch starts at the log end; OffsetForLeaderEpoch and fencing', async () => {
    const h = await Harness.create()
    await h.createTopic()
    await h.produce(batch(3))
    await h.bumpLeaderEpoch()
    await h.produce(batch(2))
    assert.equal(h.partition.leaderEpoch, 1)
    assert.equal(
      (await h.disk.readFile(`${DIR}/${TOPIC}-0/leader-epoch-checkpoint`)).toString(),
      '0\n2\n0 0\n1 3\n',
    )
    const q = (leaderEpoch: number, currentLeaderEpoch = -1) =>
      h.rm.lastOffsetForLeaderEpoch(TOPIC, 0, { currentLeaderEpoch, leaderEpoch, replicaId: -1 })
    assert.deepEqual(await q(0), { errorCode: 0, leaderEpoch: 0, endOffset: 3n })
    assert.deepEqual(await q(1), { errorCode: 0, leaderEpoch: 1, endOffset: 5n })
    assert.equal((await q(1, 0)).errorCode, ErrorCode.FencedLeaderEpoch)
    assert.equal((await q(1, 2)).errorCode, ErrorCode.UnknownLeaderEpoch)
    // The batches carry the epoch that wrote them; ListOffsets reports it.
    const byTime = await h.rm.listOffset(TOPIC, 0, {
      timestamp: 0n,
      currentLeaderEpoch: -1,
      isolationLevel: 0,
      replicaId: -1,
    })
    assert.deepEqual([byTime.offset, byTime.leaderEpoch], [0n, 0])
    const latest = await h.rm.listOffset(TOPIC, 0, {
      timestamp: -1n,
      currentLeaderEpoch: 1,
      isolationLevel: 0,
      replicaId: -1,
    })
    assert.deepEqual([latest.offset, latest.leaderEpoch], [5n, 1])
    // A fetch naming a last fetched epoch that ended earlier here learns where to truncate.
    const diverged = await h.rm.fetchMessages(
      [
        {
          topic: TOPIC,
          partition: 0,
          fetchOffset: 4n,
          maxBytes: 1000,
          currentLeaderEpoch: 1,
          lastFetchedEpoch: 0,
        },
      ],
      { replicaId: -1, maxWaitMs: 0, minBytes: 1, maxBytes: 1000, isolationLevel: 0 },
    )
    assert.deepEqual(diverged[0]!.divergingEpoch, { epoch: 0, endOffset: 3n })
  })

  test('ListOffsets: earliest, latest, by time, max timestamp; DeleteRecords moves the earliest, durably', async () => {
    const h = await Harness.create()
    await h.createTopic()
    await h.produce(batch(2, { ts: 1000 }))
    await h.produce(batch(2, { ts: 3000 }))
    await h.produce(batch(2, { ts: 2000 }))
    const at = (timestamp: bigint) =>
      h.rm.listOffset(TOPIC, 0, { timestamp, currentLeaderEpoch: -1, isolationLevel: 0, replicaId: -1 })
    assert.equal((await at(-2n)).offset, 0n)
    assert.equal((await at(-1n)).offset, 6n)
    assert.deepEqual([(await at(2500n)).offset, (await at(2500n)).timestamp], [2n, 3000n])
    assert.deepEqual([(await at(-3n)).offset, (await at(-3n)).timestamp], [2n, 3000n])
    assert.deepEqual([(await at(9999n)).offset, (await at(9999n)).timestamp], [-1n, -1n])
    assert.deepEqual(await h.rm.deleteRecords(TOPIC, 0, 3n), { errorCode: 0, lowWatermark: 3n })
    assert.equal((await h.rm.deleteRecords(TOPIC, 0, 99n)).errorCode, ErrorCode.OffsetOutOfRange)
    assert.equal((await at(-2n)).offset, 3n)
    assert.equal((await h.fetch(0n))[0]!.errorCode, ErrorCode.OffsetOutOfRange)
    await h.restart(true)
    assert.equal((await at(-2n)).offset, 3n, 'the low watermark survives a crash')
  })

  test('with a follower in the ISR, acks=-1 waits for its fetch; past the timeout it is REQUEST_TIMED_OUT', async () => {
    const h = await Harness.create()
    await h.createTopic({ replicas: [1, 2] })
    const produced = pending(h.produce(batch(2), -1, 1000))
    await settle()
    assert.equal(produced.done, false)
    const follower = (fetchOffset: bigint) =>
      h.rm.fetchMessages(
        [
          {
            topic: TOPIC,
            partition: 0,
            fetchOffset,
            maxBytes: 1000,
            currentLeaderEpoch: 0,
            lastFetchedEpoch: -1,
          },
        ],
        { replicaId: 2, maxWaitMs: 0, minBytes: 1, maxBytes: 1000, isolationLevel: 0 },
      )
    const first = await follower(0n)
    assert.deepEqual(values(first[0]!.records), ['v0', 'v1'], 'followers read past the high watermark')
    assert.equal(h.partition.highWatermark, 0n)
    await follower(2n)
    await settle()
    assert.equal(produced.done, true)
    assert.equal(produced.value![0]!.errorCode, ErrorCode.None)
    assert.equal(h.partition.highWatermark, 2n)

    const late = pending(h.produce(batch(1), -1, 1000))
    await settle()
    h.clock.advance(1000)
    await settle()
    assert.equal(late.value![0]!.errorCode, ErrorCode.RequestTimedOut)

    // The counters of the replicated path saw it: two acks=all produces (one answered when the
    // high watermark passed it, one timed out after 1000 ms), two follower fetches.
    const stats = h.rm.stats.take() as Record<string, { n: number; max: number }>
    assert.equal(stats.produceAllBytes!.n, 2)
    assert.equal(stats.produceAllWaitMs!.n, 2)
    assert.equal(stats.produceAllWaitMs!.max, 1000)
    assert.equal(stats.produceAfterHwMs!.n, 1)
    assert.equal(stats.followerFetchBytes!.n, 2)
    assert.equal((h.rm.stats.take() as Record<string, { n: number }>).followerFetchBytes!.n, 0, 'take resets')
  })

  test("a follower's long poll ends when a partition it is to fetch becomes led here, and parks again once it names it", async () => {
    const h = await Harness.create()
    await h.createTopic({ replicas: [1, 2] })
    const OTHER = 'joined' as TopicName
    const follower = (topics: readonly TopicName[], maxWaitMs = 500) => h.followerFetch(2, topics, maxWaitMs)
    const ledHereWithFollower2 = (name: TopicName, idByte: number) => h.ledHere(name, idByte, [1, 2])
    const parked = pending(follower([TOPIC]))
    await settle()
    assert.equal(parked.done, false, 'nothing to read: the fetch parks')
    // A new partition led here with follower 2: its parked fetch (sent before it knew) ends now.
    await ledHereWithFollower2(OTHER, 9)
    await settle()
    assert.equal(parked.done, true, 'woken without the clock moving')
    // Until a fetch of follower 2 names it, none parks.
    const again = pending(follower([TOPIC]))
    await settle()
    assert.equal(again.done, true)
    assert.equal((await follower([TOPIC, OTHER], 0))[1]!.errorCode, ErrorCode.None)
    const settledIn = pending(follower([TOPIC, OTHER]))
    await settle()
    assert.equal(settledIn.done, false, 'named: its fetches park again')
    h.clock.advance(500)
    await settle()
    assert.equal(settledIn.done, true)

    // A follower that never names it parks again after 500 ms.
    await ledHereWithFollower2('late' as TopicName, 10)
    const spinning = pending(follower([TOPIC]))
    await settle()
    assert.equal(spinning.done, true, 'not named yet: answered at once')
    h.clock.advance(500)
    const late = pending(follower([TOPIC]))
    await settle()
    assert.equal(late.done, false, 'past the join wait: parks')
    h.clock.advance(500)
    await settle()
    assert.equal(late.done, true)
  })

  test('a replica added by a reassignment (no new leader epoch) ends its parked long poll here', async () => {
    const h = await Harness.create()
    await h.createTopic({ replicas: [1, 2] })
    // Broker 3 already follows another partition led here, and has a fetch of it parked.
    const THIRD = 'third' as TopicName
    await h.ledHere(THIRD, 11, [1, 3])
    const fetchBy3 = (topics: readonly TopicName[]) => h.followerFetch(3, topics)
    const parked = pending(fetchBy3([THIRD]))
    await settle()
    assert.equal(parked.done, false, 'nothing to read: the fetch parks')
    const epoch = h.partition.leaderEpoch
    await h.commit(
      encodeMetadataRecord(T.PartitionChange, 0, {
        topicId: TOPIC_ID,
        partitionId: 0,
        replicas: [1, 2, 3] as BrokerId[],
        addingReplicas: [3] as BrokerId[],
      }),
    )
    assert.deepEqual(h.partition.replicas, [1, 2, 3])
    assert.equal(h.partition.leaderEpoch, epoch, 'a reassignment: the same leader epoch')
    await settle()
    assert.equal(parked.done, true, 'woken without the clock moving')
    const unnamed = pending(fetchBy3([THIRD]))
    await settle()
    assert.equal(unnamed.done, true, 'until a fetch of broker 3 names it, none parks')
    const again = pending(fetchBy3([THIRD, TOPIC]))
    await settle()
    assert.equal(again.done, false, 'named: its fetches park again')
    h.clock.advance(500)
    await settle()
    assert.equal(again.done, true)
  })

  test('min.insync.replicas: acks=-1 is refused before appending when the ISR is too small', async () => {
    const h = await Harness.create()
    await h.createTopic({ replicas: [1, 2], isr: [1], configs: { 'min.insync.replicas': '2' } })
    assert.equal((await h.produce(batch(1)))[0]!.errorCode, ErrorCode.NotEnoughReplicas)
    assert.equal(h.partition.logEndOffset, 0n)
    assert.equal((await h.produce(batch(1), 1))[0]!.errorCode, ErrorCode.None)
  })

  test('a deleted topic: its log goes, waiting fetches wake, and requests see UNKNOWN_TOPIC_OR_PARTITION', async () => {
    const h = await Harness.create()
    await h.createTopic()
    await h.produce(batch(1))
    const waiting = pending(h.fetch(1n, { maxWaitMs: 60_000 }))
    await settle()
    await h.commit(encodeMetadataRecord(T.RemoveTopic, 0, { topicId: TOPIC_ID }))
    await settle()
    assert.equal(waiting.done, true)
    assert.equal(waiting.value![0]!.errorCode, ErrorCode.UnknownTopicOrPartition)
    assert.equal(h.rm.getPartition(TOPIC, 0), undefined)
    assert.equal(h.manager.getLog(TOPIC, 0), undefined)
    assert.ok(!(await h.disk.list(DIR)).includes(`${TOPIC}-0`), 'the directory was renamed for deletion')
    assert.equal((await h.produce(batch(1)))[0]!.errorCode, ErrorCode.UnknownTopicOrPartition)
  })

  test('message.timestamp.type=LogAppendTime stamps the broker time and answers it', async () => {
    const h = await Harness.create()
    await h.createTopic({ configs: { 'message.timestamp.type': 'LogAppendTime' } })
    const r = await h.produce(batch(2, { ts: 5 }))
    assert.equal(r[0]!.logAppendTimeMs, h.clock.nowMs())
    const read = (await h.fetch(0n))[0]!.records
    assert.equal(decodeBatch(read, 0).header.maxTimestamp, BigInt(h.clock.nowMs()))
  })

  test('transactions: open ones hold the LSO; COMMIT and ABORT markers end them; read_committed stops at the LSO with the aborted list; a restart and a crash keep it all', async () => {
    const h = await Harness.create()
    await h.createTopic()
    const txn = (pid: bigint, n: number, seq = 0) => batch(n, { producerId: pid, seq, transactional: true })
    assert.equal((await h.produce(txn(1n, 3)))[0]!.baseOffset, 0n) // 0-2
    assert.equal((await h.produce(txn(2n, 2)))[0]!.baseOffset, 3n) // 3-4
    assert.equal((await h.produce(batch(1)))[0]!.baseOffset, 5n)
    assert.deepEqual([h.partition.highWatermark, h.partition.lastStableOffset], [6n, 0n])
    const held = (await h.fetch(0n, { isolationLevel: 1 }))[0]!
    assert.deepEqual([held.records.length, held.lastStableOffset], [0, 0n], 'read_committed stops at the LSO')
    assert.equal((await h.fetch(0n))[0]!.lastStableOffset, 0n, 'every fetch answers the LSO')
    assert.deepEqual([await h.latest(1), await h.latest(0)], [0n, 6n])
    const producers = await h.rm.activeProducers(TOPIC, 0)
    assert.deepEqual(
      producers.producers.map((p) => [p.producerId, p.currentTxnFirstOffset]),
      [
        [1n, 0n],
        [2n, 3n],
      ],
    )
    const plain = await h.produce(batch(1, { producerId: 1n, seq: 3 }))
    assert.equal(plain[0]!.errorCode, ErrorCode.InvalidTxnState, 'a plain batch inside an open transaction')

    // A parked read_committed long poll wakes once the LSO moves.
    const parked = h.fetch(0n, { isolationLevel: 1, maxWaitMs: 10_000 })
    const commit = await h.marker(1n, true, { coordinatorEpoch: 5 })
    assert.deepEqual([commit.errorCode, commit.baseOffset], [ErrorCode.None, 6n])
    const woken = (await parked)[0]!
    assert.equal(woken.lastStableOffset, 3n, "producer 2's transaction still holds it")
    assert.deepEqual(values(woken.records), ['v0', 'v1', 'v2'])
    assert.equal(
      (await h.marker(1n, false, { coordinatorEpoch: 4 })).errorCode,
      ErrorCode.TransactionCoordinatorFenced,
    )
    assert.equal((await h.marker(2n, false, { epoch: -1 })).errorCode, ErrorCode.InvalidProducerEpoch)
    assert.equal((await h.marker(2n, false)).baseOffset, 7n)
    assert.deepEqual([h.partition.highWatermark, h.partition.lastStableOffset], [8n, 8n])
    // Producer 3 opens a transaction that stays open across the restarts.
    assert.equal((await h.produce(txn(3n, 1)))[0]!.baseOffset, 8n)

    const check = async (when: string) => {
      assert.equal(h.partition.lastStableOffset, 8n, when)
      assert.equal(await h.latest(1), 8n, when)
      const r = (await h.fetch(0n, { isolationLevel: 1 }))[0]!
      assert.deepEqual(
        r.abortedTransactions,
        [{ producerId: 2n, firstOffset: 3n, lastOffset: 7n, lastStableOffset: 8n }],
        when,
      )
      // Batches 0-2, 3-4, 5, and the two markers (6, 7): everything below the LSO.
      const read = values(r.records)
      assert.deepEqual(read.slice(0, 6), ['v0', 'v1', 'v2', 'v0', 'v1', 'v0'], when)
      assert.equal(read.length, 8, when)
      // From the commit marker on, the abort marker is still ahead: the transaction is still listed.
      assert.equal((await h.fetch(6n, { isolationLevel: 1 }))[0]!.abortedTransactions?.length, 1, when)
      assert.equal(h.partition.state.producers.get(3n)?.currentTxnFirstOffset, 8n, when)
    }
    await check('before a restart')
    assert.ok((await h.disk.list(`${DIR}/${TOPIC}-0`)).includes('00000000000000000000.txnindex'))
    await h.restart()
    await check('after a restart')
    await h.restart(true)
    await check('after a crash (producer state and .txnindex replayed from the log)')
    assert.equal((await h.marker(3n, true)).baseOffset, 9n)
    assert.equal(h.partition.lastStableOffset, 10n)
  })

  test('an aborted transaction is listed to read_committed as soon as its marker is readable, while an earlier file write of the partition is still held', async () => {
    // DeleteRecords moves the leader-epoch cache's first entry: its checkpoint is rewritten, and
    // held at its rename here (a slow fsync, say). The marker's `.txnindex` entry must not wait
    // behind it, or a read_committed fetch finds the marker and hands out the aborted records.
    let held = false
    let release: (() => void) | null = null
    class HeldDisk extends SimDisk {
      override async rename(from: string, to: string): Promise<void> {
        if (held && release === null && to.endsWith('leader-epoch-checkpoint'))
          await new Promise<void>((resolve) => {
            release = resolve
          })
        return super.rename(from, to)
      }
    }
    const h = new Harness(new HeldDisk())
    await h.disk.mkdir(DIR)
    await h.disk.syncDir('/')
    await h.open()
    await h.createTopic()
    await h.produce(batch(2))
    held = true
    assert.deepEqual(await h.rm.deleteRecords(TOPIC, 0, 1n), { errorCode: 0, lowWatermark: 1n })
    for (let i = 0; i < 100 && release === null; i++) await new Promise((r) => setImmediate(r))
    assert.notEqual(release, null, "the epoch cache's checkpoint write is held")
    assert.equal((await h.produce(batch(2, { producerId: 2n, transactional: true })))[0]!.baseOffset, 2n)
    assert.equal((await h.marker(2n, false)).baseOffset, 4n)
    const r = (await h.fetch(1n, { isolationLevel: 1 }))[0]!
    assert.equal(r.lastStableOffset, 5n)
    assert.deepEqual(r.abortedTransactions, [
      { producerId: 2n, firstOffset: 2n, lastOffset: 4n, lastStableOffset: 5n },
    ])
    held = false
    ;(release as (() => void) | null)?.()
    await h.rm.settled()
  })

  test("DeleteRecords past an open transaction's first offset: the last stable offset is the new log start, not below it", async () => {
    const h = await Harness.create()
    await h.createTopic()
    assert.equal((await h.produce(batch(1, { producerId: 3n, transactional: true })))[0]!.baseOffset, 0n)
    await h.produce(batch(2))
    assert.deepEqual([h.partition.lastStableOffset, h.partition.highWatermark], [0n, 3n])
    assert.deepEqual(await h.rm.deleteRecords(TOPIC, 0, 2n), { errorCode: 0, lowWatermark: 2n })
    assert.equal(h.partition.lastStableOffset, 2n)
    assert.equal(await h.latest(1), 2n, 'ListOffsets latest at read_committed')
    const r = (await h.fetch(2n, { isolationLevel: 1 }))[0]!
    assert.deepEqual([r.errorCode, r.lastStableOffset, r.records.length], [ErrorCode.None, 2n, 0])
    assert.equal((await h.marker(3n, false)).baseOffset, 3n)
    assert.equal(h.partition.lastStableOffset, 4n)
  })

  test("KIP-890 for a coordinator's transactional write (TxnOffsetCommit): a guard a marker voided since is refused, a fresh one appends", async () => {
    const h = await Harness.create()
    await h.createTopic()
    // As ReplicaOffsetsLog appends a transactional offset commit.
    const log = {
      append: async (_partition: number, records: Buffer, verificationGuard: object | null) =>
        (
          await h.rm.appendRecords([{ topic: TOPIC, partition: 0, records, verificationGuard }], {
            acks: -1,
            timeoutMs: 30_000,
            origin: 'coordinator',
          })
        )[0]!,
    }
    const offsets = () => batch(1, { producerId: 7n, seq: 0, transactional: true })
    const stale = h.rm.startTxnVerification(TOPIC, 0, 7n, 0)
    assert.ok(stale !== null && stale !== undefined, 'no transaction open: a guard')
    // The producer's (previous) transaction ends here between the verification and the write.
    assert.equal((await h.marker(7n, false)).errorCode, ErrorCode.None)
    const refused = await log.append(0, offsets(), stale)
    assert.equal(refused.errorCode, ErrorCode.InvalidTxnState)
    const fresh = h.rm.startTxnVerification(TOPIC, 0, 7n, 0)
    const written = await log.append(0, offsets(), fresh ?? null)
    assert.equal(written.errorCode, ErrorCode.None)
    // Open now: no guard needed (null), and the write checks it still is.
    assert.equal(h.rm.startTxnVerification(TOPIC, 0, 7n, 0), null)
    assert.equal((await log.append(0, offsets(), null)).errorCode, ErrorCode.None)
    assert.equal((await h.marker(7n, true)).errorCode, ErrorCode.None)
    assert.equal((await log.append(0, offsets(), null)).errorCode, ErrorCode.InvalidTxnState)
  })

  test("a coordinator's transactional batches (origin coordinator) get no duplicate or sequence check, only the epoch's", async () => {
    const h = await Harness.create()
    await h.createTopic()
    const commit = (epoch = 0) => batch(1, { producerId: 4n, seq: 0, epoch, transactional: true })
    const write = async (records: Buffer) =>
      (
        await h.rm.appendRecords([{ topic: TOPIC, partition: 0, records }], {
          acks: -1,
          timeoutMs: 30_000,
          origin: 'coordinator',
        })
      )[0]!
    assert.equal((await write(commit())).baseOffset, 0n)
    assert.equal((await write(commit())).baseOffset, 1n, 'sequence 0 again is a new batch, not a retry')
    const retry = (await h.produce(commit()))[0]!
    assert.equal(
      retry.baseOffset,
      0n,
      "a client's is Kafka's duplicate (of the first batch with its sequences)",
    )
    assert.equal(h.partition.logEndOffset, 2n)
    await h.marker(4n, true, { epoch: 1 })
    assert.equal((await write(commit(0))).errorCode, ErrorCode.InvalidProducerEpoch)
  })

  test('a truncation that cuts a marker reopens its transaction (producer state reloaded from the log)', async () => {
    const h = await Harness.create()
    await h.createTopic()
    await h.produce(batch(2, { producerId: 1n, transactional: true })) // 0-1
    await h.marker(1n, true) // 2
    assert.equal(h.partition.lastStableOffset, 3n)
    await h.partition.truncateTo(2n)
    assert.equal(h.partition.state.producers.get(1n)?.currentTxnFirstOffset, 0n)
    assert.equal(h.partition.lastStableOffset, 0n)
    assert.equal((await h.marker(1n, false)).baseOffset, 2n, 'the coordinator ends it again')
    assert.equal(h.partition.lastStableOffset, 3n)
  })
})

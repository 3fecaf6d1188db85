/**
 * The client matrix's common part (java-client, franz-go, confluent-kafka and platformatic tests):
 * the records every client produces (keys, values with binary bytes, headers, timestamps), the
 * shapes its driver prints, and the checks on what it read back. A driver runs one command a
 * process and prints one JSON object on its last line; what it read is compared byte for byte
 * (hex) with what this file says was sent.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { after, before, test } from 'node:test'
import { ClusterClient, type KafkaConnection } from '../../src/client/index.ts'
import { nodeTransport, systemClock } from '../../src/io/index.ts'
import type { BrokerId, TopicName } from '../../src/model/index.ts'
import {
  apis,
  Compression,
  compressionOf,
  decodeBatch,
  LOG_OVERHEAD,
  readBatchHeader,
} from '../../src/protocol/index.ts'
import { COMPAT_NODES, CompatTarget, freePortPair } from '../support/compat-target.ts'
import { openConnection } from '../support/connection.ts'

export { freePortPair }

export const CODECS = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const
export const PER_CODEC = 30
export const PARTITIONS = 3
export const BASE_TS = 1_600_000_000_000
/** ListOffsets by time asks for the first record at or after the first snappy record's time. */
export const BY_TIME_TS = BASE_TS + 2 * 1000

const hex = (s: string) => Buffer.from(s).toString('hex')

/** What record `i` of codec `codec` is, as every driver builds it. */
export function expected(codec: string, i: number) {
  const c = CODECS.indexOf(codec as (typeof CODECS)[number])
  assert.ok(c >= 0, `unknown codec ${codec}`)
  return {
    key: hex(`k-${codec}-${i}`),
    value: Buffer.concat([
      Buffer.from(`${codec}-${i}:${'weir-compat-'.repeat(8)}`),
      Buffer.from([0, 0xff, i & 0xff]),
    ]).toString('hex'),
    headers: [
      ['codec', hex(codec)],
      ['index', hex(String(i))],
      ['bin', Buffer.from([0, 0xff, i & 0xff]).toString('hex')],
    ],
    timestamp: BASE_TS + c * 1000 + i,
  }
}

/** Send order of a codec record by its hex key: codec by codec, then index. */
function rankOf(keyHex: string): number {
  const m = /^k-(\w+)-(\d+)$/.exec(Buffer.from(keyHex, 'hex').toString())
  assert.ok(m !== null, `unexpected key ${Buffer.from(keyHex, 'hex').toString()}`)
  return CODECS.indexOf(m[1] as (typeof CODECS)[number]) * 1000 + Number(m[2])
}

export interface ReadRecord {
  readonly partition: number
  readonly offset: number
  readonly key: string | null
  readonly value: string | null
  readonly headers: ReadonlyArray<readonly [string, string | null]>
  readonly timestamp: number
}

export interface SentRecord {
  readonly key: string
  readonly partition: number
  readonly offset: number
  readonly timestamp: number
}

export type ByPartition = Readonly<Record<string, number>>

/** Every codec record exactly once, byte-equal, and in send order within each partition. */
export function checkCodecRecords(records: readonly ReadRecord[], sent?: readonly SentRecord[]): void {
  assert.equal(records.length, CODECS.length * PER_CODEC, 'every record, once')
  const seen = new Set<string>()
  for (const r of records) {
    assert.ok(r.key !== null && !seen.has(r.key), `${r.key} read twice`)
    seen.add(r.key)
    const [, codec, i] = /^k-(\w+)-(\d+)$/.exec(Buffer.from(r.key, 'hex').toString()) ?? []
    const want = expected(codec!, Number(i))
    assert.deepEqual(
      { key: r.key, value: r.value, headers: r.headers, timestamp: r.timestamp },
      want,
      `record ${codec}-${i}`,
    )
  }
  const partitions = new Set(records.map((r) => r.partition))
  assert.equal(partitions.size, PARTITIONS, 'the keys spread over every partition')
  for (const p of partitions) {
    const mine = records.filter((r) => r.partition === p)
    for (let j = 1; j < mine.length; j++) {
      assert.ok(mine[j]!.offset > mine[j - 1]!.offset, `partition ${p}: offsets increase`)
      assert.ok(rankOf(mine[j]!.key!) > rankOf(mine[j - 1]!.key!), `partition ${p}: send order kept`)
    }
  }
  if (sent !== undefined) {
    assert.equal(sent.length, records.length)
    const at = new Map(sent.map((s) => [s.key, s]))
    for (const r of records) {
      const s = at.get(r.key!)
      assert.deepEqual([r.partition, r.offset], [s?.partition, s?.offset], 'read where the ack said')
    }
  }
}

/** The end offset of each partition, from the records read from offset 0. */
export function endsOf(records: readonly ReadRecord[]): Record<string, number> {
  const ends: Record<string, number> = {}
  for (const r of records) ends[r.partition] = Math.max(ends[r.partition] ?? 0, r.offset + 1)
  return ends
}

export interface OffsetsResult {
  readonly earliest: ByPartition
  readonly latest: ByPartition
  readonly byTime: ByPartition
  readonly byTimeTimestamp?: ByPartition
  readonly consumerByTime?: ByPartition
}

/** ListOffsets: 0, the end, and by time the first record at or after BY_TIME_TS. */
export function checkOffsets(o: OffsetsResult, records: readonly ReadRecord[]): void {
  const ends = endsOf(records)
  const byTime: Record<string, number> = {}
  const byTimeTs: Record<string, number> = {}
  for (const p of Object.keys(ends)) {
    const first = records
      .filter((r) => String(r.partition) === p && r.timestamp >= BY_TIME_TS)
      .sort((a, b) => a.offset - b.offset)[0]!
    byTime[p] = first.offset
    byTimeTs[p] = first.timestamp
  }
  assert.deepEqual(o.earliest, Object.fromEntries(Object.keys(ends).map((p) => [p, 0])), 'earliest')
  assert.deepEqual(o.latest, ends, 'latest')
  assert.deepEqual(o.byTime, byTime, 'by timestamp')
  if (o.byTimeTimestamp !== undefined) assert.deepEqual(o.byTimeTimestamp, byTimeTs, 'timestamps found')
  if (o.consumerByTime !== undefined) assert.deepEqual(o.consumerByTime, byTime, "the consumer's lookup")
}

export interface AdminResult {
  readonly again: string
  readonly listed: readonly string[]
  readonly partitions: ReadonlyArray<readonly number[]>
  readonly retention: string
  readonly cleanup: string
  readonly partitionsAfter: number
  readonly listedAfterDelete: readonly string[]
  readonly describeDeleted: string
}

/**
 * The admin command on `<prefix>-a` (3 partitions, then retention.ms=86400000 and 5 partitions)
 * and `<prefix>-b` (cleanup.policy=compact, then deleted); the error names are the client's own.
 */
export async function checkAdmin(
  a: AdminResult,
  prefix: string,
  errors: { readonly exists: string; readonly unknown: string },
  bootstrap: string,
): Promise<void> {
  assert.equal(a.again, errors.exists, 'creating it again')
  assert.ok(a.listed.includes(`${prefix}-a`) && a.listed.includes(`${prefix}-b`), 'both listed')
  if (COMPAT_NODES === 1) {
    assert.deepEqual(
      a.partitions,
      [0, 1, 2].map((p) => [p, 1, 1, 1]),
      'three partitions led by node 1, one replica in sync',
    )
  } else {
    // [partition, leader, replicas, in sync]: every node a replica, and in sync from the start
    // (Kafka's initial ISR is the whole replica set).
    assert.deepEqual(
      a.partitions.map(([p, , r, i]) => [p, r, i]),
      [0, 1, 2].map((p) => [p, COMPAT_NODES, COMPAT_NODES]),
      `three partitions on all ${COMPAT_NODES} nodes, all in sync`,
    )
    for (const [, leader] of a.partitions) assert.ok(leader! >= 1 && leader! <= COMPAT_NODES, 'a leader')
  }
  if (COMPAT_NODES === 1 || a.retention === '86400000') assert.equal(a.retention, '86400000')
  else {
    // In a cluster the driver's describe may reach a broker that has not applied the committed
    // change yet (metadata reaches each broker on its own, as in Kafka): the change must then
    // show on every broker.
    assert.equal(a.retention, '604800000', 'before the change, the default')
    await waitConfigOnEveryBroker(bootstrap, `${prefix}-a`, 'retention.ms', '86400000')
  }
  assert.equal(a.cleanup, 'compact')
  assert.equal(a.partitionsAfter, 5)
  assert.ok(a.listedAfterDelete.includes(`${prefix}-a`))
  assert.ok(!a.listedAfterDelete.includes(`${prefix}-b`), 'the deleted topic is not listed')
  assert.equal(a.describeDeleted, errors.unknown)
}

/** Until every broker of `bootstrap` describes the topic config `key` as `value` (10 s at most). */
async function waitConfigOnEveryBroker(
  bootstrap: string,
  topic: string,
  key: string,
  value: string,
): Promise<void> {
  const deadline = Date.now() + 10_000
  for (const address of bootstrap.split(',')) {
    const [host, port] = address.split(':')
    const c = await openConnection({ host: host!, port: Number(port) }, 'compat-config-check')
    try {
      for (;;) {
        const res = await c.request(apis.DescribeConfigs, 4, {
          resources: [{ resourceType: 2, resourceName: topic, configurationKeys: [key] }],
          includeSynonyms: false,
          includeDocumentation: false,
        })
        const seen = res.results[0]?.configs.find((x) => x.name === key)?.value
        if (seen === value) break
        assert.ok(Date.now() < deadline, `${address} still describes ${topic} ${key}=${seen}`)
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    } finally {
      c.close()
    }
  }
}

/** Records read after the `more` command: its plain records, keys and values more-<i>. */
export function checkMore(records: readonly ReadRecord[], count: number): void {
  assert.deepEqual(
    records.map((r) => Buffer.from(r.key ?? '', 'hex').toString()).sort(),
    Array.from({ length: count }, (_, i) => `more-${i}`).sort(),
  )
  for (const r of records) assert.equal(r.value, r.key)
}

/** The Weir a matrix runs against: one node, or a cluster with `WEIR_COMPAT_NODES` (compat-target.ts). */
export class MatrixNode extends CompatTarget {
  constructor() {
    super('weir-matrix-', {
      'group.initial.rebalance.delay.ms': 300,
      // A restarted controller waits out the last broker session before re-registration.
      'broker.heartbeat.interval.ms': 300,
      'broker.session.timeout.ms': 1200,
    })
  }
}

/**
 * A client of the target that sends each partition's request to its leader (one node: that node).
 */
function leaderClient(bootstrap: string): ClusterClient {
  return new ClusterClient({
    bootstrap: bootstrap.split(','),
    clientId: 'weir-matrix',
    clock: systemClock,
    transport: nodeTransport,
    requestTimeoutMs: 10_000,
    inFlightRequestsMax: 1,
    retryTimeoutMs: 20_000,
  })
}

/** A connection to the leader of `topic`-`partition`, retrying while it moves. */
async function leaderOf(client: ClusterClient, topic: string, partition: number): Promise<KafkaConnection> {
  return client.retrying(async () => client.broker(await client.leaderOf(topic, partition)))
}

/**
 * Runs a driver command and returns the JSON object on its last stdout line; a failure (exit code,
 * no JSON) throws with the driver's output, so that a test says what went wrong.
 */
export async function runDriver<T>(
  command: string,
  args: readonly string[],
  env: Record<string, string>,
  timeoutMs = 120_000,
): Promise<T> {
  const { stdout, stderr, code } = await new Promise<{ stdout: string; stderr: string; code: unknown }>(
    (resolve) => {
      execFile(
        command,
        args,
        { env: { ...process.env, ...env }, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 },
        (error, stdout, stderr) =>
          resolve({ stdout, stderr, code: error === null ? 0 : (error.code ?? error) }),
      )
    },
  )
  const last = stdout.trim().split('\n').at(-1) ?? ''
  if (code !== 0 || !last.startsWith('{')) {
    throw new Error(
      `${[command, ...args].join(' ')} failed (${String(code)}):\n${stdout.slice(-4000)}\n${stderr.slice(-8000)}`,
    )
  }
  return JSON.parse(last) as T
}

export interface ProducerState {
  readonly partition: number
  readonly producerId: number
  readonly epoch: number
  readonly lastSequence: number
}

/** DescribeProducers of every partition of `topic`, straight from Weir (no client needed). */
export async function describeProducers(
  bootstrap: string,
  topic: string,
  partitions: number,
): Promise<ProducerState[]> {
  const client = leaderClient(bootstrap)
  try {
    const out: ProducerState[] = []
    for (let partition = 0; partition < partitions; partition++) {
      const c = await leaderOf(client, topic, partition)
      const res = await c.request(apis.DescribeProducers, 0, {
        topics: [{ name: topic as TopicName, partitionIndexes: [partition] }],
      })
      for (const p of res.topics[0]?.partitions ?? []) {
        assert.equal(p.errorCode, 0, `DescribeProducers ${topic}-${p.partitionIndex}`)
        for (const s of p.activeProducers) {
          out.push({
            partition: p.partitionIndex,
            producerId: Number(s.producerId),
            epoch: s.producerEpoch,
            lastSequence: s.lastSequence,
          })
        }
      }
    }
    return out
  } finally {
    client.close()
  }
}

/**
 * The compression of the batch holding each record of `topic`, by hex key, straight from Weir's
 * log (Fetch without a client): a client that silently stops compressing still reads back fine.
 */
export async function batchCompressions(
  bootstrap: string,
  topic: string,
  partitions: number,
): Promise<Map<string, number>> {
  const client = leaderClient(bootstrap)
  const out = new Map<string, number>()
  try {
    for (let partition = 0; partition < partitions; partition++) {
      const c = await leaderOf(client, topic, partition)
      let fetchOffset = 0n
      for (let round = 0; round < 1000; round++) {
        const res = await c.request(apis.Fetch, 11, {
          replicaId: -1 as BrokerId,
          maxWaitMs: 0,
          minBytes: 0,
          maxBytes: 1 << 20,
          isolationLevel: 0,
          sessionId: 0,
          sessionEpoch: -1,
          topics: [
            {
              topic: topic as TopicName,
              partitions: [
                {
                  partition,
                  currentLeaderEpoch: -1,
                  fetchOffset,
                  lastFetchedEpoch: -1,
                  logStartOffset: -1n,
                  partitionMaxBytes: 1 << 20,
                },
              ],
            },
          ],
          forgottenTopicsData: [],
          rackId: '',
        })
        const p = res.responses[0]?.partitions[0]
        assert.equal(p?.errorCode, 0, `Fetch ${topic}-${partition}`)
        const buf = (p.records ?? Buffer.alloc(0)) as Buffer
        let at = 0
        while (at + LOG_OVERHEAD <= buf.length) {
          const size = LOG_OVERHEAD + buf.readInt32BE(at + 8)
          if (at + size > buf.length) break
          const header = readBatchHeader(buf, at)
          for (const r of decodeBatch(buf, at).records) {
            if (r.key !== null) out.set(r.key.toString('hex'), compressionOf(header.attributes))
          }
          fetchOffset = header.baseOffset + BigInt(header.lastOffsetDelta) + 1n
          at += size
        }
        if (fetchOffset >= p.highWatermark) break
      }
    }
    return out
  } finally {
    client.close()
  }
}

/** Each codec record sits in a batch compressed with its codec. */
export function checkCompressions(compressions: ReadonlyMap<string, number>): void {
  for (const codec of CODECS) {
    for (let i = 0; i < PER_CODEC; i++) {
      const key = expected(codec, i).key
      assert.equal(compressions.get(key), Compression[codec], `k-${codec}-${i}: the batch's compression`)
    }
  }
}

/**
 * Waits until the topic's latest offsets (ListOffsets: the high watermark) add up to at least
 * `records`. A producer's acks=1 comes back after the append, before the high watermark passes it
 * (Weir moves it only past fsynced records; Kafka only past the ISR's fetches), so a reader that
 * takes the latest offsets as its end right after producing could stop short. Kafka's clients
 * give no read-your-acks=1-writes promise either: the test waits for visibility, then reads.
 */
export async function waitVisible(
  bootstrap: string,
  topic: string,
  partitions: number,
  records: number,
): Promise<void> {
  const client = leaderClient(bootstrap)
  try {
    let total = 0n
    for (let round = 0; round < 300; round++) {
      total = 0n
      for (let partitionIndex = 0; partitionIndex < partitions; partitionIndex++) {
        const c = await leaderOf(client, topic, partitionIndex)
        const res = await c.request(apis.ListOffsets, 1, {
          replicaId: -1 as BrokerId,
          isolationLevel: 0,
          topics: [
            {
              name: topic as TopicName,
              partitions: [{ partitionIndex, currentLeaderEpoch: -1, timestamp: -1n }],
            },
          ],
          timeoutMs: 10_000,
        })
        const p = res.topics[0]?.partitions[0]
        if (p?.errorCode === 0) total += p.offset
        else await client.refresh().catch(() => {})
      }
      if (total >= BigInt(records)) return
      await new Promise((done) => setTimeout(done, 20))
    }
    assert.fail(`${topic}: ${total} records visible of ${records} produced after 300 rounds`)
  } finally {
    client.close()
  }
}

/** The idempotent producer's topic: one producer id, each record once in order, the last sequence. */
export async function checkIdempotent(
  bootstrap: string,
  topic: string,
  acked: readonly number[],
  read: readonly ReadRecord[],
): Promise<ProducerState[]> {
  const count = acked.length
  assert.deepEqual(
    [...acked].sort((a, b) => a - b),
    Array.from({ length: count }, (_, i) => i),
    'acked offsets 0..n-1',
  )
  assert.deepEqual(
    read.map((r) => [r.offset, Buffer.from(r.value ?? '', 'hex').toString()]),
    Array.from({ length: count }, (_, i) => [i, `v${i}`]),
    'each record once, in order',
  )
  const producers = await describeProducers(bootstrap, topic, 1)
  assert.equal(producers.length, 1, 'one producer')
  assert.ok(producers[0]!.producerId >= 0, 'a producer id from InitProducerId')
  assert.equal(producers[0]!.lastSequence, count - 1, 'sequences 0..n-1')
  return producers
}

/** How a test runs its client's commands: a driver process, or in-process for a Node client. */
export type MatrixDriver = (command: string, ...args: string[]) => Promise<unknown>

export interface MatrixOptions {
  /** Installs or builds the client (fails loudly if it cannot) and returns its driver. */
  readonly driver: (bootstrap: () => string) => Promise<MatrixDriver>
  /** The client's names for TOPIC_ALREADY_EXISTS and UNKNOWN_TOPIC_OR_PARTITION. */
  readonly errors: { readonly exists: string; readonly unknown: string }
  /** Checks of the client's own beyond the common ones, after each step. */
  readonly also?: {
    readonly produced?: (out: { sent: SentRecord[] }, node: MatrixNode) => Promise<void> | void
    readonly idempotent?: (out: Record<string, unknown>, producers: ProducerState[]) => void
    readonly committed?: (out: Record<string, unknown>) => void
  }
}

/**
 * The matrix's steps for one client, as node:test tests against one Weir node: admin; every codec
 * produced and read back by a group consumer that commits; an idempotent producer; ListOffsets;
 * a clean restart after which everything reads again and the group resumes where it committed.
 */
export function clientMatrix(o: MatrixOptions): void {
  const weir = new MatrixNode()
  let run: MatrixDriver
  let codecs: ReadRecord[] = []
  let idempotentAcked: number[] = []
  const GROUP = 'matrix-group'

  before(async () => {
    run = await o.driver(() => weir.bootstrap)
    await weir.start()
  })
  after(async () => {
    await weir.close()
  })

  test('admin: create, list, describe, alter (configs, partitions) and delete topics', async () => {
    await checkAdmin((await run('admin', 'adm')) as AdminResult, 'adm', o.errors, weir.bootstrap)
  })

  test('keyed records with headers in every codec: a group consumer reads each once, in order, and commits', async () => {
    const produced = (await run('produce', 'codecs', String(PARTITIONS))) as { sent: SentRecord[] }
    await o.also?.produced?.(produced, weir)
    await waitVisible(weir.bootstrap, 'codecs', PARTITIONS, CODECS.length * PER_CODEC)
    const consumed = (await run('consume', 'codecs', GROUP)) as {
      records: ReadRecord[]
      committed: ByPartition
    }
    checkCodecRecords(consumed.records, produced.sent.some((s) => s.offset >= 0) ? produced.sent : undefined)
    checkCompressions(await batchCompressions(weir.bootstrap, 'codecs', PARTITIONS))
    assert.deepEqual(consumed.committed, endsOf(consumed.records), 'committed the end offsets')
    codecs = consumed.records
  })

  test('an idempotent producer: one producer id, each record once and in order, sequences 0..n-1', async () => {
    const out = (await run('idempotent', 'idempotent', '200')) as { offsets: number[] } & Record<
      string,
      unknown
    >
    idempotentAcked = out.offsets
    await waitVisible(weir.bootstrap, 'idempotent', 1, out.offsets.length)
    const read = (await run('read', 'idempotent')) as { records: ReadRecord[] }
    const producers = await checkIdempotent(weir.bootstrap, 'idempotent', out.offsets, read.records)
    o.also?.idempotent?.(out, producers)
  })

  test('ListOffsets: earliest, latest and by timestamp', async () => {
    assert.ok(codecs.length > 0, 'the codec records were read')
    checkOffsets((await run('offsets', 'codecs', String(BY_TIME_TS))) as OffsetsResult, codecs)
  })

  test('after a clean restart everything reads again, and the group resumes from its commits', async () => {
    await weir.restart()
    const again = (await run('read', 'codecs')) as { records: ReadRecord[] }
    checkCodecRecords(again.records)
    assert.deepEqual(
      again.records.map((r) => [r.partition, r.offset, r.key]).sort(),
      codecs.map((r) => [r.partition, r.offset, r.key]).sort(),
      'the same offsets as before the restart',
    )
    const idempotent = (await run('read', 'idempotent')) as { records: ReadRecord[] }
    assert.equal(idempotent.records.length, idempotentAcked.length)
    const committed = (await run('committed', 'codecs', GROUP)) as { committed: ByPartition }
    assert.deepEqual(committed.committed, endsOf(codecs), 'the commits survived')
    o.also?.committed?.(committed)
    await run('more', 'codecs', '10')
    await waitVisible(weir.bootstrap, 'codecs', PARTITIONS, codecs.length + 10)
    const resumed = (await run('consume', 'codecs', GROUP)) as {
      records: ReadRecord[]
      committed: ByPartition
    }
    checkMore(resumed.records, 10)
    assert.deepEqual(resumed.committed, endsOf([...codecs, ...resumed.records]))
  })
}

/**
 * The transactional workload: real kafkajs transactional producers while faults happen, and the
 * checks Jepsen made of Kafka's transactions, on what a fresh read_committed kafkajs consumer
 * reads after healing.
 *
 * - `producers` loops, each one transactional id: begin, send 1..txnRecordsMax unique values
 *   (`<producer>:<session>:<txn>:<i>`) over the topic's partitions with acks=all (one send per
 *   partition, around a kafkajs retry bug described in `#run`), then commit, or
 *   abort one time in four (seeded). A transaction's outcome is what the client was told:
 *   `committed` (commit resolved), `aborted` (abort resolved, also after a failed send), `unknown`
 *   (anything else). After a failure the producer is replaced by a new one with the same
 *   transactional id, which fences the old one (InitProducerId) as an application restart would.
 * - The checks (`checkTransactions`): no aborted read (no value of an aborted transaction is read),
 *   no torn transaction (each transaction's values read all or none), no lost committed write (every
 *   committed transaction read whole), no duplicate (a value read once), and each producer's
 *   transactions in order within each partition.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import kafkajs from 'kafkajs'
import { SeededRandom } from '../../../src/io/index.ts'
import {
  batchSizeAt,
  decodeBatch,
  isControl,
  isTransactional,
  LOG_OVERHEAD,
} from '../../../src/protocol/index.ts'

const { Kafka, logLevel } = kafkajs

export type TxnOutcome = 'committed' | 'aborted' | 'unknown'

export interface Txn {
  readonly id: string
  readonly producer: number
  /** The order of this transaction among its producer's. */
  readonly seq: number
  readonly values: ReadonlyArray<{ readonly partition: number; readonly value: string }>
  outcome: TxnOutcome
}

export interface TxnWorkloadOptions {
  readonly brokers: readonly string[]
  readonly topic: string
  readonly partitions: number
  readonly producers: number
  readonly seed: number
  readonly txnRecordsMax?: number
  /** kafkajs `transactionTimeout` (the broker aborts a transaction left open this long). */
  readonly transactionTimeoutMs?: number
  readonly log?: (line: string) => void
}

function client(brokers: readonly string[], clientId: string) {
  return new Kafka({
    clientId,
    brokers: [...brokers],
    logLevel: logLevel.NOTHING,
    connectionTimeout: 3_000,
    requestTimeout: 10_000,
    retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 2_000 },
  })
}

export class TxnWorkload {
  readonly #o: TxnWorkloadOptions
  readonly #txns: Txn[] = []
  #running = false
  #loops: Promise<void>[] = []

  constructor(options: TxnWorkloadOptions) {
    this.#o = options
  }

  start(): void {
    this.#running = true
    for (let i = 0; i < this.#o.producers; i++) this.#loops.push(this.#loop(i))
  }

  /** Stops starting transactions and waits for the open ones to end (commit, abort or failure). */
  async stop(): Promise<void> {
    this.#running = false
    await Promise.all(this.#loops)
  }

  get transactions(): readonly Txn[] {
    return this.#txns
  }

  async #loop(producerIndex: number): Promise<void> {
    const random = new SeededRandom(this.#o.seed * 1000 + producerIndex)
    const kafka = client(this.#o.brokers, `faults-txn-${producerIndex}`)
    const transactionalId = `faults-txn-${producerIndex}`
    let session = 0
    let seq = 0
    while (this.#running) {
      session++
      const producer = kafka.producer({
        transactionalId,
        idempotent: true,
        maxInFlightRequests: 1,
        transactionTimeout: this.#o.transactionTimeoutMs ?? 10_000,
      })
      try {
        await producer.connect()
      } catch (e) {
        this.#o.log?.(`txn producer ${producerIndex}: connect: ${(e as Error).message}`)
        await producer.disconnect().catch(() => {})
        await new Promise((r) => setTimeout(r, 500))
        continue
      }
      while (this.#running) {
        seq++
        const id = `${producerIndex}:${session}:${seq}`
        const count = 1 + random.int(this.#o.txnRecordsMax ?? 6)
        const values = Array.from({ length: count }, (_, i) => ({
          partition: random.int(this.#o.partitions),
          value: `${id}:${i}`,
        }))
        const commit = random.int(4) !== 0
        const txn: Txn = { id, producer: producerIndex, seq, values, outcome: 'unknown' }
        this.#txns.push(txn)
        const ok = await this.#run(producer, txn, commit)
        if (!ok) break // a new producer (same transactional id) carries on
      }
      await producer.disconnect().catch(() => {})
    }
  }

  /** One transaction; false when the producer must be replaced. */
  async #run(
    producer: ReturnType<ReturnType<typeof client>['producer']>,
    txn: Txn,
    commit: boolean,
  ): Promise<boolean> {
    let t: Awaited<ReturnType<typeof producer.transaction>>
    try {
      t = await producer.transaction()
    } catch (e) {
      this.#o.log?.(`txn ${txn.id}: begin: ${(e as Error).message}`)
      return false
    }
    try {
      // One send per partition, in the transaction's order of first use. kafkajs's sendMessages
      // regroups a retried send by the partitions' current leaders and resends only to brokers
      // without an answer yet: a record whose partition moved to a broker that had answered is
      // dropped while the send resolves, and one whose broker was replaced (a closed connection)
      // is sent again under new sequence numbers. A send to one partition reaches one leader, so
      // neither can happen and what the checks find is the broker's doing.
      for (const partition of new Set(txn.values.map((v) => v.partition))) {
        await t.send({
          topic: this.#o.topic,
          acks: -1,
          messages: txn.values
            .filter((v) => v.partition === partition)
            .map((v) => ({ partition, value: v.value })),
        })
      }
      if (commit) {
        await t.commit()
        txn.outcome = 'committed'
      } else {
        await t.abort()
        txn.outcome = 'aborted'
      }
      return true
    } catch (e) {
      this.#o.log?.(`txn ${txn.id}: ${(e as Error).message}`)
      try {
        await t.abort()
        txn.outcome = 'aborted'
      } catch {
        // unknown: the coordinator may still commit what it prepared
      }
      return false
    }
  }
}

/** Everything a fresh read_committed kafkajs consumer reads, once nothing new came for `idleMs`. */
export async function readCommitted(
  brokers: readonly string[],
  topic: string,
  idleMs: number,
  timeoutMs: number,
): Promise<Map<number, Array<{ offset: bigint; value: string }>>> {
  const consumer = client(brokers, 'faults-txn-checker').consumer({
    groupId: `faults-txn-checker-${Date.now()}`,
    readUncommitted: false,
    maxBytesPerPartition: 1 << 20,
  })
  const read = new Map<number, Array<{ offset: bigint; value: string }>>()
  let last = Date.now()
  await consumer.connect()
  try {
    await consumer.subscribe({ topic, fromBeginning: true })
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        last = Date.now()
        const list = read.get(partition) ?? []
        list.push({ offset: BigInt(message.offset), value: message.value?.toString() ?? '<null>' })
        read.set(partition, list)
      },
    })
    const deadline = Date.now() + timeoutMs
    while (Date.now() - last < idleMs && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200))
  } finally {
    await consumer.disconnect()
  }
  return read
}

export interface TxnVerdict {
  readonly committed: number
  readonly aborted: number
  readonly unknown: number
  /** Values of aborted transactions that were read. */
  readonly abortedReads: string[]
  /** Transactions read in part. */
  readonly torn: string[]
  /** Committed transactions not read (whole). */
  readonly lost: string[]
  /** Values read more than once. */
  readonly duplicates: string[]
  /** Values read that no transaction sent. */
  readonly unexpected: string[]
  /** A producer's transactions out of their order within a partition. */
  readonly reordered: string[]
}

export function checkTransactions(
  txns: readonly Txn[],
  read: ReadonlyMap<number, ReadonlyArray<{ offset: bigint; value: string }>>,
): TxnVerdict {
  const byValue = new Map<string, Txn>()
  for (const t of txns) for (const v of t.values) byValue.set(v.value, t)
  const seen = new Map<string, number>()
  const unexpected: string[] = []
  const reordered: string[] = []
  for (const [partition, records] of read) {
    const lastSeq = new Map<number, number>()
    for (const r of [...records].sort((a, b) => (a.offset < b.offset ? -1 : a.offset > b.offset ? 1 : 0))) {
      seen.set(r.value, (seen.get(r.value) ?? 0) + 1)
      const t = byValue.get(r.value)
      if (t === undefined) {
        unexpected.push(r.value)
        continue
      }
      const before = lastSeq.get(t.producer) ?? 0
      if (t.seq < before) reordered.push(`${partition}@${r.offset}: ${r.value} after txn ${before}`)
      lastSeq.set(t.producer, t.seq)
    }
  }
  const abortedReads: string[] = []
  const torn: string[] = []
  const lost: string[] = []
  for (const t of txns) {
    const readCount = t.values.filter((v) => seen.has(v.value)).length
    if (t.outcome === 'aborted') {
      for (const v of t.values) if (seen.has(v.value)) abortedReads.push(v.value)
    } else if (readCount !== 0 && readCount !== t.values.length) {
      torn.push(`${t.id} (${t.outcome}): ${readCount} of ${t.values.length} read`)
    }
    if (t.outcome === 'committed' && readCount !== t.values.length) lost.push(t.id)
  }
  return {
    committed: txns.filter((t) => t.outcome === 'committed').length,
    aborted: txns.filter((t) => t.outcome === 'aborted').length,
    unknown: txns.filter((t) => t.outcome === 'unknown').length,
    abortedReads,
    torn,
    lost,
    duplicates: [...seen].filter(([, n]) => n > 1).map(([v]) => v),
    unexpected,
    reordered,
  }
}

/**
 * Every batch of `topic` in one node's segment files, one line each (offset range, producer id and
 * epoch, transactional, control with its marker type, values), and the `.txnindex` entries' sizes:
 * what a failed check is read against.
 */
export function dumpTransactionalLog(logDir: string, topic: string): string {
  const lines: string[] = []
  let dirs: string[] = []
  try {
    dirs = readdirSync(logDir)
  } catch {
    return ''
  }
  for (const d of dirs.filter((x) => x.startsWith(`${topic}-`)).sort()) {
    lines.push(`== ${d}`)
    for (const f of readdirSync(join(logDir, d)).sort()) {
      const buf = readFileSync(join(logDir, d, f))
      if (f.endsWith('.txnindex')) {
        for (let at = 0; at + 34 <= buf.length; at += 34) {
          lines.push(
            `  ${f}: aborted producer ${buf.readBigInt64BE(at + 2)} first ${buf.readBigInt64BE(at + 10)} last ${buf.readBigInt64BE(at + 18)} lso ${buf.readBigInt64BE(at + 26)}`,
          )
        }
        continue
      }
      if (!f.endsWith('.log')) continue
      let at = 0
      while (at + LOG_OVERHEAD <= buf.length) {
        let size: number
        try {
          size = batchSizeAt(buf, at)
          if (at + size > buf.length) break
          const b = decodeBatch(buf, at)
          const h = b.header
          const control = isControl(h.attributes)
          const what = control
            ? `${b.records[0]?.key?.readInt16BE(2) === 1 ? 'COMMIT' : 'ABORT'} coordinatorEpoch ${b.records[0]?.value?.readInt32BE(2)}`
            : b.records.map((r) => r.value?.toString()).join(' ')
          lines.push(
            `  ${h.baseOffset}-${h.baseOffset + BigInt(h.lastOffsetDelta)} pid ${h.producerId} e${h.producerEpoch} seq ${h.baseSequence} le ${h.partitionLeaderEpoch}${isTransactional(h.attributes) ? ' txn' : ''}: ${what}`,
          )
        } catch {
          break
        }
        at += size
      }
    }
  }
  return lines.join('\n')
}

/**
 * A transactional workload for the whole-cluster simulation: one transactional producer with its
 * own producer id and epoch writes transactions to several partitions through the leaders'
 * `appendRecords`, then a simulated coordinator decides COMMIT or ABORT and appends the marker on
 * every partition of the transaction through `appendTxnMarkers`, retrying on the leader until
 * written (as the coordinator's marker channel does). The coordinator may fail in the middle of
 * writing markers: a successor, in a higher coordinator epoch, writes them all again with the
 * decided outcome. A read_committed consumer per partition reads throughout; after convergence
 * every replica is read read_committed (filtered as Java's consumer does) and its log walked.
 */

import type { SeededRandom } from '../../../src/io/random.ts'
import type { TopicName } from '../../../src/model/index.ts'
import {
  ControlRecordType,
  decodeBatch,
  decodeControlKey,
  ErrorCode,
  encodeBatch,
  isControl,
  isTransactional,
  readBatchHeader,
} from '../../../src/protocol/index.ts'
import type { ReadOutcome } from '../../../src/replication/index.ts'
import { type ClusterChecker, ClusterInvariant, ClusterViolation } from './cluster-invariants.ts'
import type { SimBroker } from './sim-broker.ts'
import type { NodeClock, SimEndpoint, SimWorld } from './sim-world.ts'

export const TXN_PRODUCER_ID = 9_000_000_000n

type Outcome = 'commit' | 'abort'

interface Txn {
  readonly id: number
  readonly partitions: number[]
  /** Per partition: the acknowledged batches (offset, values). */
  readonly acked: Map<number, Array<{ offset: bigint; values: string[] }>>
  outcome: Outcome | null
  done: boolean
  /** Per partition: the offset of the first acknowledged marker. */
  readonly markers: Map<number, bigint>
}

export interface TxnContext {
  readonly world: SimWorld
  readonly topic: TopicName
  readonly partitions: number
  readonly timeoutMs: number
  readonly backoffMs: number
  readonly gapMs: number
  readonly random: SeededRandom
  readonly checker: ClusterChecker
  readonly client: (id: number) => SimEndpoint & { readonly clock: NodeClock }
  readonly leaderOf: (partition: number) => SimBroker | undefined
  readonly anomaly: () => void
}

/** Java's consumer filtering of a read_committed answer: per producer, from each aborted transaction's first offset. */
function readCommitted(
  o: ReadOutcome,
  visit: (h: ReturnType<typeof readBatchHeader>, values: string[]) => void,
): bigint | null {
  const aborted = [...(o.abortedTransactions ?? [])].sort((a, b) => (a.firstOffset < b.firstOffset ? -1 : 1))
  const abortedProducers = new Set<bigint>()
  let at = 0
  let next: bigint | null = null
  while (at + 61 <= o.records.length) {
    const h = readBatchHeader(o.records, at)
    const lastOffset = h.baseOffset + BigInt(h.lastOffsetDelta)
    while (aborted.length > 0 && aborted[0]!.firstOffset <= lastOffset)
      abortedProducers.add(aborted.shift()!.producerId)
    const batch = decodeBatch(o.records, at)
    if (isControl(h.attributes)) {
      const type = decodeControlKey(batch.records[0]?.key ?? null).type
      if (type === ControlRecordType.abort) abortedProducers.delete(h.producerId)
    } else if (!(isTransactional(h.attributes) && abortedProducers.has(h.producerId))) {
      visit(
        h,
        batch.records.map((r) => r.value?.toString() ?? ''),
      )
    }
    next = lastOffset + 1n
    at += 12 + h.batchLength
  }
  return next
}

export class TxnWorkload {
  readonly #c: TxnContext
  readonly txns: Txn[] = []
  #running = true
  #epoch = 0
  #coordinatorEpoch = 0
  readonly #sequences = new Map<number, number>()
  /** Per partition: what the read_committed consumer delivered (value -> offset) and its position. */
  readonly #delivered = new Map<number, Map<string, bigint>>()
  readonly #positions = new Map<number, bigint>()
  committed = 0
  aborted = 0

  constructor(c: TxnContext) {
    this.#c = c
  }

  get idle(): boolean {
    return this.txns.every((t) => t.done)
  }

  stop(): void {
    this.#running = false
  }

  start(): void {
    const c = this.#c.client(400)
    c.clock.setTimer(this.#c.random.nextFloat() * 10, () => this.#begin(c))
    for (let p = 0; p < this.#c.partitions; p++) this.#consume(p)
  }

  #log(line: string): void {
    this.#c.world.log(`txn ${line}`)
  }

  #begin(c: SimEndpoint & { readonly clock: NodeClock }): void {
    if (!this.#running) return
    const { random, partitions } = this.#c
    const chosen = [...Array(partitions).keys()].filter(() => random.nextFloat() < 0.7)
    if (chosen.length === 0) chosen.push(random.int(partitions))
    const txn: Txn = {
      id: this.txns.length,
      partitions: chosen,
      acked: new Map(),
      outcome: null,
      done: false,
      markers: new Map(),
    }
    this.txns.push(txn)
    const batches: Array<{ partition: number; values: string[] }> = []
    for (const p of chosen)
      for (let b = 0; b < 1 + random.int(2); b++) {
        const n = 1 + random.int(2)
        batches.push({ partition: p, values: [...Array(n).keys()].map((i) => `t${txn.id}/${p}/${b}/${i}`) })
      }
    const epoch = this.#epoch
    this.#log(`${txn.id} BEGIN epoch ${epoch} partitions [${chosen}]`)
    const send = (i: number) => {
      if (i === batches.length) return this.#decide(c, txn, false)
      const { partition, values } = batches[i]!
      const seq = this.#sequences.get(partition) ?? 0
      const records = encodeBatch({
        records: values.map((v) => ({
          key: null,
          value: Buffer.from(v),
          timestamp: BigInt(c.clock.nowMs()),
        })),
        producerId: TXN_PRODUCER_ID,
        producerEpoch: epoch,
        baseSequence: seq,
        transactional: true,
      })
      const retry = () => c.clock.setTimer(this.#c.backoffMs, () => send(i))
      const leader = this.#c.leaderOf(partition)
      if (leader === undefined) return retry()
      this.#c.world
        .rpc(c.id, leader.id, c.clock, this.#c.timeoutMs, async () => {
          if (leader.rm === null || !leader.serving) throw new Error('not serving')
          const [r] = await leader.rm.appendRecords([{ topic: this.#c.topic, partition, records }], {
            acks: -1,
            timeoutMs: this.#c.timeoutMs,
          })
          return r!
        })
        .then(
          (r) => {
            if (r.errorCode === ErrorCode.None) {
              this.#log(
                `${txn.id} ACK ${this.#c.topic}-${partition}@${r.baseOffset} seq ${seq} (leader ${leader.id})`,
              )
              try {
                this.#c.checker.ack(
                  `${this.#c.topic}-${partition}`,
                  r.baseOffset,
                  TXN_PRODUCER_ID,
                  seq,
                  leader.id,
                )
              } catch (e) {
                this.#c.world.fail(e)
              }
              const list = txn.acked.get(partition) ?? []
              txn.acked.set(partition, list)
              list.push({ offset: r.baseOffset, values })
              this.#sequences.set(partition, seq + values.length)
              send(i + 1)
              return
            }
            if (
              r.errorCode === ErrorCode.OutOfOrderSequenceNumber ||
              r.errorCode === ErrorCode.UnknownProducerId ||
              r.errorCode === ErrorCode.InvalidProducerEpoch
            ) {
              // The leader lost part of this producer's history (a power loss): abort, then bump the epoch.
              this.#c.anomaly()
              this.#log(`${txn.id} ANOMALY error ${r.errorCode} seq ${seq}: abort and bump the epoch`)
              return this.#decide(c, txn, true)
            }
            this.#log(
              `${txn.id} produce ${this.#c.topic}-${partition} seq ${seq} to ${leader.id}: error ${r.errorCode}`,
            )
            retry()
          },
          () => retry(),
        )
    }
    send(0)
  }

  #decide(c: SimEndpoint & { readonly clock: NodeClock }, txn: Txn, mustAbort: boolean): void {
    const { random } = this.#c
    txn.outcome = mustAbort || random.nextFloat() < 0.3 ? 'abort' : 'commit'
    this.#log(`${txn.id} DECIDED ${txn.outcome}`)
    const pending = new Set(txn.partitions)
    // The coordinator fails after writing some markers: its successor writes them all again.
    const failAfter = random.nextFloat() < 0.3 ? random.int(txn.partitions.length) : -1
    let written = 0
    let coordinatorEpoch = this.#coordinatorEpoch
    let generation = 0
    const finish = () => {
      txn.done = true
      if (txn.outcome === 'commit') this.committed++
      else this.aborted++
      this.#log(`${txn.id} COMPLETE ${txn.outcome}`)
      if (mustAbort) {
        this.#epoch++
        this.#sequences.clear()
      }
      c.clock.setTimer(random.nextFloat() * this.#c.gapMs, () => this.#begin(c))
    }
    const write = (partition: number, gen: number) => {
      if (gen !== generation || !pending.has(partition)) return
      const retry = () => c.clock.setTimer(this.#c.backoffMs, () => write(partition, gen))
      const leader = this.#c.leaderOf(partition)
      if (leader === undefined) return retry()
      const marker = {
        producerId: TXN_PRODUCER_ID,
        producerEpoch: this.#epoch,
        coordinatorEpoch,
        committed: txn.outcome === 'commit',
      }
      this.#c.world
        .rpc(c.id, leader.id, c.clock, this.#c.timeoutMs, async () => {
          if (leader.rm === null || !leader.serving) throw new Error('not serving')
          const [r] = await leader.rm.appendTxnMarkers(
            [{ topic: this.#c.topic, partition, marker }],
            this.#c.timeoutMs,
          )
          return r!
        })
        .then(
          (r) => {
            if (gen !== generation) return
            if (r.errorCode !== ErrorCode.None) {
              this.#log(
                `${txn.id} marker ${this.#c.topic}-${partition} to ${leader.id}: error ${r.errorCode}`,
              )
              return retry()
            }
            this.#log(
              `${txn.id} MARKER ${txn.outcome} ${this.#c.topic}-${partition}@${r.baseOffset} (coordinator epoch ${coordinatorEpoch})`,
            )
            if (!txn.markers.has(partition)) txn.markers.set(partition, r.baseOffset)
            pending.delete(partition)
            written++
            if (pending.size === 0) return finish()
            if (written === failAfter + 1 && failAfter >= 0 && gen === 0) {
              generation++
              const downMs = random.nextFloat() * this.#c.gapMs * 20
              this.#log(
                `${txn.id} COORDINATOR FAILS after ${written} markers, back in ${downMs.toFixed(1)} ms`,
              )
              c.clock.setTimer(downMs, () => {
                coordinatorEpoch = ++this.#coordinatorEpoch
                // The successor loads the decision and writes every marker again.
                for (const p of txn.partitions) pending.add(p)
                for (const p of txn.partitions) write(p, generation)
              })
            }
          },
          () => retry(),
        )
    }
    for (const p of txn.partitions) write(p, 0)
  }

  #outcomeOf(value: string): Txn | undefined {
    return this.txns[Number(value.slice(1, value.indexOf('/')))]
  }

  /** A read_committed consumer of one partition, polling its leader. */
  #consume(partition: number): void {
    const { world, topic, timeoutMs } = this.#c
    const c = this.#c.client(500 + partition)
    const delivered = new Map<string, bigint>()
    this.#delivered.set(partition, delivered)
    this.#positions.set(partition, 0n)
    const pollMs = this.#c.backoffMs * 2
    const poll = () => {
      const leader = this.#c.leaderOf(partition)
      if (leader === undefined) return c.clock.setTimer(pollMs, poll)
      const position = this.#positions.get(partition)!
      world
        .rpc(c.id, leader.id, c.clock, timeoutMs, async () => {
          if (leader.rm === null || !leader.serving) throw new Error('not serving')
          const [o] = await leader.rm.fetchMessages(
            [
              {
                topic,
                partition,
                fetchOffset: position,
                maxBytes: 1 << 20,
                currentLeaderEpoch: -1,
                lastFetchedEpoch: -1,
              },
            ],
            { replicaId: -1, maxWaitMs: 0, minBytes: 1, maxBytes: 1 << 20, isolationLevel: 1 },
          )
          return o!
        })
        .then(
          (o) => {
            try {
              if (o.errorCode === ErrorCode.None) {
                const next = readCommitted(o, (h, values) => {
                  if (h.producerId !== TXN_PRODUCER_ID) return
                  this.#visible(
                    `${topic}-${partition}`,
                    h.baseOffset,
                    o.lastStableOffset,
                    values,
                    `consumer from ${leader.id}`,
                  )
                  for (const v of values) delivered.set(v, h.baseOffset)
                })
                if (next !== null) this.#positions.set(partition, next)
              }
            } catch (e) {
              world.fail(e)
            }
            c.clock.setTimer(pollMs, poll)
          },
          () => c.clock.setTimer(pollMs, poll),
        )
    }
    c.clock.setTimer(pollMs, poll)
  }

  /** A record a read_committed read returned: below the LSO, of a transaction decided COMMIT. */
  #visible(
    tp: string,
    offset: bigint,
    lso: bigint,
    values: string[],
    who: string,
    excused: (offset: bigint) => boolean = (o) => this.#c.checker.powerLossExplains(tp, o, 1 << 30),
  ): void {
    if (offset >= lso)
      throw new ClusterViolation(
        ClusterInvariant.NoUncommittedRead,
        `${tp}@${offset} read past the LSO ${lso} by ${who}`,
      )
    for (const v of values) {
      const txn = this.#outcomeOf(v)
      if (txn?.outcome === 'commit') continue
      // Its marker lost to a power failure (a follower's unsynced copy that then led), a later one closed it.
      const marker = txn?.markers.get(Number(tp.slice(tp.lastIndexOf('-') + 1)))
      if (marker !== undefined && excused(marker)) {
        this.#c.checker.excusedLosses++
        continue
      }
      throw new ClusterViolation(
        txn?.outcome === 'abort' ? ClusterInvariant.NoAbortedRead : ClusterInvariant.NoUncommittedRead,
        `${tp}@${offset} ${v} read by ${who}, its transaction ${txn?.outcome ?? 'undecided'}`,
      )
    }
  }

  /** After convergence (every transaction complete): every replica read read_committed, and its log walked. */
  async check(
    brokers: readonly SimBroker[],
    replicasOf: (partition: number) => readonly number[],
    leaderEpochOf: (partition: number) => number,
  ): Promise<void> {
    const { topic, checker } = this.#c
    for (let partition = 0; partition < this.#c.partitions; partition++) {
      const tp = `${topic}-${partition}`
      const epoch = leaderEpochOf(partition)
      const excused = (offset: bigint) => checker.powerLossExplains(tp, offset, epoch)
      // What a committed transaction wrote here, as acknowledged (unless its marker was lost to a power failure).
      const expected = new Map<string, bigint>()
      for (const t of this.txns) {
        const marker = t.markers.get(partition)
        if (t.outcome === 'commit' && !(marker !== undefined && excused(marker)))
          for (const b of t.acked.get(partition) ?? []) for (const v of b.values) expected.set(v, b.offset)
      }
      // A read_committed consumer that passed a committed record delivered it.
      const position = this.#positions.get(partition)!
      const delivered = this.#delivered.get(partition)!
      for (const [v, offset] of expected)
        if (offset < position && !delivered.has(v) && !excused(offset))
          throw new ClusterViolation(
            ClusterInvariant.NoSkippedTransaction,
            `${tp}: the read_committed consumer is at ${position} past ${v}@${offset} of a committed transaction it never delivered`,
          )
      for (const id of replicasOf(partition)) {
        const rm = brokers[id - 1]!.rm!
        const read = async (isolationLevel: number, from: bigint) => {
          const [o] = await this.#c.world.drive(
            rm.fetchMessages(
              [
                {
                  topic: topic,
                  partition,
                  fetchOffset: from,
                  maxBytes: 1 << 20,
                  currentLeaderEpoch: -1,
                  lastFetchedEpoch: -1,
                },
              ],
              isolationLevel === 1
                ? {
                    replicaId: -1,
                    clientRack: 'sim',
                    maxWaitMs: 0,
                    minBytes: 0,
                    maxBytes: 1 << 20,
                    isolationLevel,
                  }
                : { replicaId: -2, maxWaitMs: 0, minBytes: 0, maxBytes: 1 << 20, isolationLevel },
            ),
          )
          return o!
        }
        // read_committed, as a consumer sees it.
        const seen = new Map<string, bigint>()
        for (let from = 0n; ; ) {
          const o = await read(1, from)
          if (o.errorCode !== ErrorCode.None)
            throw new ClusterViolation(
              ClusterInvariant.Convergence,
              `${tp} replica ${id}: read_committed error ${o.errorCode}`,
            )
          // Excused too when the transaction open there lost its marker to a power failure (a
          // hanging transaction, as on Kafka after such a loss).
          const openThere = this.txns.find((t) =>
            (t.acked.get(partition) ?? []).some((b) => b.offset === o.lastStableOffset),
          )
          const markerThere = openThere?.markers.get(partition)
          if (
            o.lastStableOffset !== o.highWatermark &&
            !excused(o.lastStableOffset) &&
            !(markerThere !== undefined && excused(markerThere))
          )
            throw new ClusterViolation(
              ClusterInvariant.TransactionMarkers,
              `${tp} replica ${id}: LSO ${o.lastStableOffset} below the high watermark ${o.highWatermark} with every transaction complete`,
            )
          const next = readCommitted(o, (h, values) => {
            if (h.producerId !== TXN_PRODUCER_ID) return
            this.#visible(
              tp,
              h.baseOffset,
              o.lastStableOffset,
              values,
              `replica ${id} (read from ${from}, aborted transactions ${JSON.stringify(o.abortedTransactions ?? [], (_k, v) => (typeof v === 'bigint' ? Number(v) : v))})`,
              excused,
            )
            for (const v of values) {
              if (seen.has(v))
                throw new ClusterViolation(
                  ClusterInvariant.NoTornTransaction,
                  `${tp} replica ${id}: ${v} read twice`,
                )
              seen.set(v, h.baseOffset)
            }
          })
          if (next === null) break
          from = next
        }
        for (const [v, offset] of expected)
          if (!seen.has(v) && !excused(offset)) {
            const torn = [...seen.keys()].some((s) => s.startsWith(v.slice(0, v.indexOf('/') + 1)))
            throw new ClusterViolation(
              torn ? ClusterInvariant.NoTornTransaction : ClusterInvariant.NoLostCommittedWrite,
              `${tp} replica ${id}: committed ${v}@${offset} not read at read_committed${torn ? ', other records of its transaction were' : ''}`,
            )
          }
        const markerLost = (txnId: number) => {
          const marker = this.txns[txnId]!.markers.get(partition)
          return marker !== undefined && excused(marker)
        }
        // The log: each transaction's records followed by one marker of its outcome; any further
        // marker (a retry, a successor coordinator's) of a transaction of this partition with the same outcome.
        let open: number | null = null
        let lastClosed = -1
        for (let from = 0n; ; ) {
          const o = await read(0, from)
          if (o.errorCode !== ErrorCode.None || o.records.length === 0) break
          let at = 0
          while (at + 61 <= o.records.length) {
            const h = readBatchHeader(o.records, at)
            from = h.baseOffset + BigInt(h.lastOffsetDelta) + 1n
            if (h.producerId === TXN_PRODUCER_ID) {
              const batch = decodeBatch(o.records, at)
              const where = `${tp}@${h.baseOffset} on replica ${id}`
              if (isControl(h.attributes)) {
                const type = decodeControlKey(batch.records[0]?.key ?? null).type
                const outcome: Outcome = type === ControlRecordType.commit ? 'commit' : 'abort'
                if (open !== null) {
                  const lost = this.txns[open]!.markers.get(partition)
                  if (this.txns[open]!.outcome !== outcome && !(lost !== undefined && excused(lost)))
                    throw new ClusterViolation(
                      ClusterInvariant.TransactionMarkers,
                      `${where}: ${outcome} marker closes transaction ${open}, decided ${this.txns[open]!.outcome}`,
                    )
                  lastClosed = open
                  open = null
                } else if (
                  !this.txns.some(
                    (t) => t.id >= lastClosed && t.outcome === outcome && t.partitions.includes(partition),
                  )
                )
                  throw new ClusterViolation(
                    ClusterInvariant.TransactionMarkers,
                    `${where}: a ${outcome} marker of no transaction`,
                  )
              } else {
                const t = this.#outcomeOf(batch.records[0]!.value!.toString())!
                // A transaction whose marker a power failure took runs on into the next one here,
                // whose marker closes both (as on Kafka).
                if (open !== null && open !== t.id && !markerLost(open))
                  throw new ClusterViolation(
                    ClusterInvariant.TransactionMarkers,
                    `${where}: transaction ${t.id} begins before ${open} has its marker`,
                  )
                if (t.id <= lastClosed)
                  throw new ClusterViolation(
                    ClusterInvariant.TransactionMarkers,
                    `${where}: a record of transaction ${t.id} after its marker`,
                  )
                open = t.id
              }
            }
            at += 12 + h.batchLength
          }
        }
        if (
          open !== null &&
          !excused(this.txns[open]!.acked.get(partition)?.[0]?.offset ?? 0n) &&
          !markerLost(open)
        )
          throw new ClusterViolation(
            ClusterInvariant.TransactionMarkers,
            `${tp} replica ${id}: transaction ${open} has no marker`,
          )
      }
    }
  }
}

/**
 * The whole-cluster invariants, checked after every event:
 * - AckedRecordNeverLost: an acknowledged record (acks=all) is in the committed log at its offset,
 *   no replica ever holds something else there below its high watermark, and at the end it is read
 *   back from the leader;
 * - HighWatermarkMonotonic: a leader's high watermark never moves back within its leader epoch;
 * - SingleLeaderPerPartitionEpoch: one broker per (partition, leader epoch), in the metadata log and
 *   among the brokers that act as leader;
 * - IsrSubsetOfReplicas: in the metadata image and in every leader's view, the ISR is a non-empty
 *   subset of the replicas holding the leader;
 * - NoDivergenceBelowHighWatermark: below its own high watermark every replica (and every consumer
 *   read) has the same batch (offsets, leader epoch, CRC) as the committed log;
 * - CommittedOffsetNeverRegresses: an offset fetch from the group's coordinator never answers less
 *   than a commit acknowledged before the fetch was sent (checked by the committer in
 *   run-cluster-seed.ts, as answers arrive).
 * The committed log is built from what replicas hold below their high watermarks: the first one to
 * pass an offset defines it, and everyone else must agree.
 */
import type { BrokerId } from '../../../src/model/index.ts'
import type { MirrorBatch, SimBroker } from './sim-broker.ts'
import type { SimController } from './sim-controller.ts'

export const ClusterInvariant = {
  AckedRecordNeverLost: 'AckedRecordNeverLost',
  HighWatermarkMonotonic: 'HighWatermarkMonotonic',
  SingleLeaderPerPartitionEpoch: 'SingleLeaderPerPartitionEpoch',
  IsrSubsetOfReplicas: 'IsrSubsetOfReplicas',
  NoDivergenceBelowHighWatermark: 'NoDivergenceBelowHighWatermark',
  CommittedOffsetNeverRegresses: 'CommittedOffsetNeverRegresses',
  NoAbortedRead: 'NoAbortedRead',
  NoUncommittedRead: 'NoUncommittedRead',
  NoTornTransaction: 'NoTornTransaction',
  NoLostCommittedWrite: 'NoLostCommittedWrite',
  NoSkippedTransaction: 'NoSkippedTransaction',
  TransactionMarkers: 'TransactionMarkers',
  Convergence: 'Convergence',
  SimulatorError: 'SimulatorError',
} as const
export type ClusterInvariant = (typeof ClusterInvariant)[keyof typeof ClusterInvariant]

export class ClusterViolation extends Error {
  readonly invariant: ClusterInvariant
  constructor(invariant: ClusterInvariant, message: string) {
    super(`${invariant}: ${message}`)
    this.invariant = invariant
  }
}

interface Acked {
  readonly producerId: bigint
  readonly sequence: number
}

interface CommittedLog {
  readonly batches: Map<bigint, MirrorBatch>
  end: bigint
}

export class ClusterChecker {
  /** Per "topic-partition": the committed log. */
  readonly committed = new Map<string, CommittedLog>()
  /** Per "topic-partition": acknowledged records by offset. */
  readonly acked = new Map<string, Map<bigint, Acked>>()
  /** "tp@epoch" -> the broker that led it (metadata and brokers' own view). */
  readonly #leaders = new Map<string, number>()
  /** "broker:incarnation:tp" -> the last high watermark seen as leader, with its epoch. */
  readonly #leaderHw = new Map<string, { epoch: number; hw: bigint }>()
  /** Per broker, per tp: from which offset a power loss put its unsynced records at risk. */
  readonly powerRisk = new Map<number, Map<string, bigint>>()
  /** Per tp: the highest leader epoch seen. */
  readonly #latestEpoch = new Map<string, number>()
  /** Per tp: committed batches an excused loss replaced, by offset. */
  readonly #superseded = new Map<string, Map<bigint, MirrorBatch[]>>()
  /** Losses a power failure explains (a replica lost unsynced records, then led without them). */
  excusedLosses = 0
  ackCount = 0
  #metadataChecked = 0
  readonly #log: (line: string) => void

  constructor(log: (line: string) => void) {
    this.#log = log
  }

  #committedOf(tp: string): CommittedLog {
    let c = this.committed.get(tp)
    if (c === undefined) {
      c = { batches: new Map(), end: 0n }
      this.committed.set(tp, c)
    }
    return c
  }

  /** A producer got an acknowledgement: `offset` holds its batch (producerId, sequence). */
  ack(tp: string, offset: bigint, producerId: bigint, sequence: number, leader: number): void {
    this.ackCount++
    let m = this.acked.get(tp)
    if (m === undefined) {
      m = new Map()
      this.acked.set(tp, m)
    }
    const prior = m.get(offset)
    if (prior !== undefined && (prior.producerId !== producerId || prior.sequence !== sequence)) {
      const message = `${tp}@${offset} acknowledged twice: to producer ${prior.producerId} seq ${prior.sequence} and to ${producerId} seq ${sequence} by leader ${leader}`
      // Explained when the acking leader, or any leader of the partition so far, lost records from
      // this offset on to a power failure (seed 4049: the last ISR member lost its unsynced copy,
      // led without it, and a later leader took the offset again), as the observe path excuses.
      const risk = this.powerRisk.get(leader)?.get(tp)
      const explained =
        (risk !== undefined && risk <= offset) ||
        this.powerLossExplains(tp, offset, this.#latestEpoch.get(tp) ?? -1)
      if (!explained) throw new ClusterViolation(ClusterInvariant.AckedRecordNeverLost, message)
      this.excusedLosses++
      this.#log(`EXCUSED (power loss) ${message}`)
      this.#rewrite(tp, offset)
    }
    m.set(offset, { producerId, sequence })
    const c = this.#committedOf(tp)
    const b = c.batches.get(offset)
    if (b !== undefined) this.#checkAcked(tp, b, 'at acknowledgement')
  }

  #checkAcked(tp: string, b: MirrorBatch, where: string): void {
    const a = this.acked.get(tp)?.get(b.baseOffset)
    if (a === undefined) return
    if (a.producerId !== b.producerId || a.sequence !== b.baseSequence) {
      throw new ClusterViolation(
        ClusterInvariant.AckedRecordNeverLost,
        `${tp}@${b.baseOffset}: acknowledged producer ${a.producerId} seq ${a.sequence}, but the committed batch there is producer ${b.producerId} seq ${b.baseSequence} (${where})`,
      )
    }
  }

  /** A batch `who` holds below its high watermark (or a consumer read): it must be the committed one. */
  observe(tp: string, b: MirrorBatch, who: string, leaderOf: (epoch: number) => number | undefined): void {
    const c = this.#committedOf(tp)
    const known = c.batches.get(b.baseOffset)
    // A replica still holding the history an excused loss replaced (it truncates once it fetches),
    // whether the new history has a batch at the same offset or one around it.
    const superseded =
      this.#superseded
        .get(tp)
        ?.get(b.baseOffset)
        ?.some((x) => same(x, b)) === true
    if (known !== undefined) {
      if (same(known, b) || superseded) return
      const excused = this.#excuse(tp, b, leaderOf, Math.min(known.epoch, b.epoch - 1))
      const wasAcked = this.acked.get(tp)?.has(b.baseOffset) === true
      const message = `${who} has ${describe(b)} at ${tp}@${b.baseOffset} below its high watermark; the committed batch there is ${describe(known)}`
      if (!excused) {
        throw new ClusterViolation(
          wasAcked ? ClusterInvariant.AckedRecordNeverLost : ClusterInvariant.NoDivergenceBelowHighWatermark,
          message,
        )
      }
      this.#log(`EXCUSED (power loss) ${message}`)
      this.#rewrite(tp, b.baseOffset)
    } else if (b.baseOffset < c.end) {
      // Inside a committed batch, or a gap the committed log skipped: not a batch boundary it knows.
      let inside = false
      for (const k of c.batches.values())
        if (k.baseOffset < b.baseOffset && k.lastOffset >= b.baseOffset) inside = true
      if (inside) {
        if (superseded) return
        if (!this.#excuse(tp, b, leaderOf)) {
          throw new ClusterViolation(
            ClusterInvariant.NoDivergenceBelowHighWatermark,
            `${who} has ${describe(b)} at ${tp}@${b.baseOffset}, inside a different committed batch`,
          )
        }
        this.#rewrite(tp, b.baseOffset)
      }
    }
    const now = this.#committedOf(tp)
    if (!now.batches.has(b.baseOffset)) {
      now.batches.set(b.baseOffset, b)
      if (b.lastOffset + 1n > now.end) now.end = b.lastOffset + 1n
      this.#checkAcked(tp, b, `committed by ${who}`)
    }
  }

  /**
   * A contradiction explained by a power loss: a leader of an epoch after the committed batch's, up
   * to the new batch's, had lost records from this offset on to a power failure (the new history
   * started there: it led without them, and later leaders followed it).
   */
  #excuse(tp: string, b: MirrorBatch, leaderOf: (epoch: number) => number | undefined, since = -1): boolean {
    for (let epoch = since + 1; epoch <= b.epoch; epoch++) {
      const leader = leaderOf(epoch)
      if (leader === undefined) continue
      const risk = this.powerRisk.get(leader)?.get(tp)
      if (risk === undefined || risk > b.baseOffset) continue
      this.excusedLosses++
      return true
    }
    return false
  }

  /** Forget the committed log from `offset` on (an excused loss): the new history replaces it. */
  #rewrite(tp: string, offset: bigint): void {
    const c = this.#committedOf(tp)
    let old = this.#superseded.get(tp)
    if (old === undefined) {
      old = new Map()
      this.#superseded.set(tp, old)
    }
    for (const [k, b] of c.batches) {
      if (k < offset) continue
      old.set(k, [...(old.get(k) ?? []), b])
      c.batches.delete(k)
    }
    c.end = offset
    const a = this.acked.get(tp)
    if (a !== undefined) for (const k of [...a.keys()]) if (k >= offset) a.delete(k)
  }

  /** Whether a leader of `tp` in an epoch up to `epoch` had lost records from `offset` on to a power failure. */
  powerLossExplains(tp: string, offset: bigint, epoch: number): boolean {
    for (let e = 0; e <= epoch; e++) {
      const leader = this.leaderOf(tp, e)
      const risk = leader === undefined ? undefined : this.powerRisk.get(leader)?.get(tp)
      if (risk !== undefined && risk <= offset) return true
    }
    return false
  }

  /** A power failure of `broker`: its records of `tp` from `durableEnd` on may be gone. */
  powerLoss(broker: number, tp: string, durableEnd: bigint): void {
    let m = this.powerRisk.get(broker)
    if (m === undefined) {
      m = new Map()
      this.powerRisk.set(broker, m)
    }
    const prior = m.get(tp)
    if (prior === undefined || durableEnd < prior) m.set(tp, durableEnd)
  }

  /** The leader of `tp` in `epoch` as the metadata log decided it. */
  leaderOf(tp: string, epoch: number): number | undefined {
    return this.#leaders.get(`${tp}@${epoch}`)
  }

  #claimLeader(tp: string, epoch: number, broker: number, source: string): void {
    const key = `${tp}@${epoch}`
    const prior = this.#leaders.get(key)
    if (epoch > (this.#latestEpoch.get(tp) ?? -1)) this.#latestEpoch.set(tp, epoch)
    if (prior === undefined) this.#leaders.set(key, broker)
    else if (prior !== broker) {
      throw new ClusterViolation(
        ClusterInvariant.SingleLeaderPerPartitionEpoch,
        `${tp} leader epoch ${epoch}: broker ${prior} and broker ${broker} (${source})`,
      )
    }
  }

  /** Everything, after one event. */
  check(controller: SimController, brokers: readonly SimBroker[]): void {
    this.#checkMetadata(controller)
    for (const b of brokers) {
      if (!b.up || !b.serving || b.rm === null) continue
      for (const p of b.rm.partitions()) {
        const tp = `${p.topic}-${p.partition}`
        if (p.isLeader) {
          this.#claimLeader(tp, p.leaderEpoch, b.id, `broker ${b.id} acts as leader`)
          const isr = p.isr
          const maximal = p.maximalIsr
          for (const [name, set] of [
            ['ISR', isr],
            ['maximal ISR', maximal],
          ] as const) {
            if (set.length === 0 || !set.every((r) => p.replicas.includes(r))) {
              throw new ClusterViolation(
                ClusterInvariant.IsrSubsetOfReplicas,
                `leader ${b.id} of ${tp} epoch ${p.leaderEpoch}: ${name} [${set}] not a non-empty subset of replicas [${p.replicas}]`,
              )
            }
          }
          const key = `${b.id}:${b.incarnation}:${tp}`
          const prior = this.#leaderHw.get(key)
          const hw = p.highWatermark
          if (prior !== undefined && prior.epoch === p.leaderEpoch && hw < prior.hw) {
            throw new ClusterViolation(
              ClusterInvariant.HighWatermarkMonotonic,
              `leader ${b.id} of ${tp} in epoch ${p.leaderEpoch}: high watermark ${prior.hw} -> ${hw}`,
            )
          }
          this.#leaderHw.set(key, { epoch: p.leaderEpoch, hw })
        }
        const mirror = b.mirrors.get(tp)
        if (mirror === undefined || !mirror.complete) continue
        const hw = p.highWatermark
        if (hw <= mirror.verifiedTo) continue
        const batches = mirror.batches
        for (let i = mirror.indexAt(mirror.verifiedTo); i < batches.length; i++) {
          const batch = batches[i]!
          if (batch.lastOffset >= hw) break
          this.observe(tp, batch, `broker ${b.id}`, (e) => this.leaderOf(tp, e))
        }
        mirror.verifiedTo = hw
      }
    }
  }

  #checkMetadata(controller: SimController): void {
    if (controller.committed === this.#metadataChecked) return
    this.#metadataChecked = controller.committed
    const image = controller.loader.image
    for (const t of image.topicsById.values()) {
      for (const [index, r] of t.partitions) {
        const tp = `${t.name}-${index}`
        const isrOk =
          r.isr.length > 0 &&
          r.isr.every((id: BrokerId) => r.replicas.includes(id)) &&
          (r.leader < 0 || r.isr.includes(r.leader))
        if (!isrOk) {
          throw new ClusterViolation(
            ClusterInvariant.IsrSubsetOfReplicas,
            `metadata: ${tp} leader ${r.leader} ISR [${r.isr}] replicas [${r.replicas}]`,
          )
        }
        if (r.leader >= 0) this.#claimLeader(tp, r.leaderEpoch, r.leader, 'metadata')
      }
    }
  }
}

function same(a: MirrorBatch, b: MirrorBatch): boolean {
  return a.crc === b.crc && a.epoch === b.epoch && a.lastOffset === b.lastOffset
}

function describe(b: MirrorBatch): string {
  return `[${b.baseOffset}..${b.lastOffset} epoch ${b.epoch} crc ${b.crc.toString(16)} producer ${b.producerId} seq ${b.baseSequence}]`
}

/**
 * The checker: after every fault is healed, compares what the clients were told with what the
 * cluster holds.
 *
 * - lost: an acknowledged value that is not in the log read back from the beginning by a fresh
 *   consumer. (`moved` when it is there, but at another offset than the acknowledgement said.)
 * - duplicated: a value present at more than one offset (values are unique and never resent by us,
 *   so with idempotence on every duplicate is the system's).
 * - reordered: two values of one producer session in one partition whose offsets are in the other
 *   order than their sequence numbers (the order they were sent in).
 * - offset conflicts: an offset that holds different values for different readers: the fresh
 *   reader, the consumer group, the acknowledgements, and every replica's segment files.
 * - phantom: a value in the log that no producer ever sent.
 * - commits backwards: a group's committed offset for a partition that moved down.
 * - undrained: partitions whose records the group had not all been handed some time after healing.
 * - unavailable: per partition, the longest time between two acknowledgements (and from the start
 *   to the first one, from the last one to the end of producing).
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { batchSizeAt, decodeBatch, LOG_OVERHEAD } from '../../../src/protocol/index.ts'
import type { InjectedFault } from './faults.ts'
import type { WorkloadResult } from './workload.ts'

export interface Verdict {
  readonly acknowledged: number
  readonly lost: string[]
  readonly moved: string[]
  readonly duplicated: string[]
  readonly reordered: string[]
  readonly offsetConflicts: string[]
  readonly phantom: string[]
  readonly commitsBackwards: string[]
  readonly undrained: number[]
  readonly replicaProblems: string[]
  /** Max unavailability per partition, ms. */
  readonly unavailableMs: Map<number, number>
  /** Where each partition's longest gap was: [from, to] in ms since the workload started. */
  readonly unavailableAt: Map<number, [number, number]>
  readonly unknownOutcome: number
  readonly recordsRead: number
}

export interface CheckInput {
  readonly workload: WorkloadResult
  /** The fresh reader's records per partition, offset -> distinct values. */
  readonly read: Map<number, Map<bigint, string[]>>
  /** Log end offsets after healing. */
  readonly ends: Map<number, bigint>
  readonly undrained: number[]
  /** Each replica's records per partition: node id -> partition -> offset -> value. */
  readonly replicas: Map<number, Map<number, Map<bigint, string>>>
  /** When producing stopped, ms since the workload started. */
  readonly producingEndedAt: number
  /** The faults injected, to say which were around a problem. */
  readonly faults?: readonly InjectedFault[]
}

const MAX_EXAMPLES = 20

function push(list: string[], s: string): void {
  if (list.length < MAX_EXAMPLES) list.push(s)
  else if (list.length === MAX_EXAMPLES) list.push('…')
}

export function check(input: CheckInput): Verdict {
  const { workload, read } = input
  const lost: string[] = []
  const moved: string[] = []
  const duplicated: string[] = []
  const reordered: string[] = []
  const offsetConflicts: string[] = []
  const phantom: string[] = []
  const commitsBackwards: string[] = []
  const replicaProblems: string[] = []
  let lostN = 0
  let movedN = 0
  let dupN = 0
  let reorderN = 0
  let conflictN = 0
  let phantomN = 0
  let replicaN = 0

  // Where every value is in the log read back.
  const where = new Map<string, Array<{ p: number; o: bigint }>>()
  let recordsRead = 0
  for (const [p, m] of read)
    for (const [o, values] of m) {
      recordsRead++
      if (values.length > 1) {
        conflictN++
        push(offsetConflicts, `p${p}@${o}: fresh reader saw ${values.join(' / ')}`)
      }
      for (const v of values) {
        const at = where.get(v) ?? []
        at.push({ p, o })
        where.set(v, at)
      }
    }

  const ackedValues = new Set(workload.acks.map((a) => a.value))
  for (const [v, at] of where) {
    if (at.length > 1) {
      dupN++
      push(duplicated, `${v} at ${at.map((x) => `p${x.p}@${x.o}`).join(', ')}`)
    }
    const sent = ackedValues.has(v) || workload.attempted.has(v)
    if (!sent) {
      phantomN++
      push(phantom, `${v} at p${at[0]!.p}@${at[0]!.o}`)
    }
  }

  for (const a of workload.acks) {
    const at = where.get(a.value)
    if (at === undefined) {
      lostN++
      push(lost, `${a.value} acked at p${a.partition}@${a.offset}`)
    } else if (!at.some((x) => x.p === a.partition && x.o === a.offset)) {
      movedN++
      push(
        moved,
        `${a.value} acked at p${a.partition}@${a.offset}, found at ${at.map((x) => `p${x.p}@${x.o}`).join(',')}`,
      )
    }
  }

  // Order: per partition, per session, sequence numbers rise with offsets.
  for (const [p, m] of read) {
    const last = new Map<string, { seq: number; o: bigint }>()
    for (const o of [...m.keys()].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0))) {
      for (const v of m.get(o)!) {
        const [session, , seqText] = v.split(':')
        const seq = Number(seqText)
        const prev = last.get(session!)
        if (prev !== undefined && seq <= prev.seq) {
          reorderN++
          push(reordered, `p${p}: ${session} seq ${seq}@${o} after seq ${prev.seq}@${prev.o}`)
        }
        last.set(session!, { seq, o })
      }
    }
  }

  // Other readers: the group's consumers and every replica's files.
  for (const [key, values] of workload.consumed) {
    const [pText, oText] = key.split('/')
    const fresh = read.get(Number(pText))?.get(BigInt(oText!))
    for (const v of values)
      if (fresh === undefined || !fresh.includes(v)) {
        conflictN++
        push(
          offsetConflicts,
          `p${pText}@${oText}: group saw ${v}, fresh reader ${fresh?.join(' / ') ?? 'nothing'}`,
        )
      }
  }
  for (const [node, partitions] of input.replicas)
    for (const [p, m] of partitions) {
      const end = input.ends.get(p) ?? 0n
      for (const [o, v] of m) {
        if (o >= end) continue // past the high watermark: not committed, may be truncated
        const fresh = read.get(p)?.get(o)
        if (fresh === undefined || !fresh.includes(v)) {
          replicaN++
          push(
            replicaProblems,
            `node ${node} p${p}@${o} holds ${v}, fresh reader ${fresh?.join(' / ') ?? 'nothing'}`,
          )
        }
      }
    }

  let backwardsN = 0
  for (const [p, list] of workload.commits)
    for (let i = 1; i < list.length; i++) {
      const [a, b] = [list[i - 1]!, list[i]!]
      if (b.offset < a.offset) {
        backwardsN++
        const active = (input.faults ?? [])
          .filter((f) => f.from < b.at && f.to + 1_000 > a.at)
          .map((f) => `${f.kind} ${f.target}`)
        push(
          commitsBackwards,
          `p${p}: ${a.offset} (${(a.at / 1000).toFixed(1)}s) -> ${b.offset} (${(b.at / 1000).toFixed(1)}s)${active.length > 0 ? `, around ${active.join('; ')}` : ''}`,
        )
      }
    }

  const unavailableMs = new Map<number, number>()
  const unavailableAt = new Map<number, [number, number]>()
  const byPartition = new Map<number, number[]>()
  for (const a of workload.acks) {
    const l = byPartition.get(a.partition) ?? []
    l.push(a.at)
    byPartition.set(a.partition, l)
  }
  for (const p of input.ends.keys()) {
    const times = [0, ...(byPartition.get(p) ?? []), input.producingEndedAt]
    let max = 0
    let at: [number, number] = [0, 0]
    for (let i = 1; i < times.length; i++)
      if (times[i]! - times[i - 1]! > max) {
        max = times[i]! - times[i - 1]!
        at = [times[i - 1]!, times[i]!]
      }
    unavailableMs.set(p, max)
    unavailableAt.set(p, at)
  }

  const counted = (list: string[], n: number) => (n === list.length ? list : [`(${n})`, ...list])
  return {
    acknowledged: workload.acks.length,
    lost: counted(lost, lostN),
    moved: counted(moved, movedN),
    duplicated: counted(duplicated, dupN),
    reordered: counted(reordered, reorderN),
    offsetConflicts: counted(offsetConflicts, conflictN),
    phantom: counted(phantom, phantomN),
    commitsBackwards: counted(commitsBackwards, backwardsN),
    undrained: input.undrained,
    replicaProblems: counted(replicaProblems, replicaN),
    unavailableMs,
    unavailableAt,
    unknownOutcome: workload.attempted.size,
    recordsRead,
  }
}

/** How many problems a list stands for (the first entry is "(n)" when examples were cut). */
export function countOf(list: readonly string[]): number {
  const m = /^\((\d+)\)$/.exec(list[0] ?? '')
  return m !== null ? Number(m[1]) : list.filter((x) => x !== '…').length
}

/**
 * Every record of `topic` in one node's log dir, read straight from the segment files: partition
 * -> offset -> value. A batch that does not decode ends that partition's scan (recovery would cut
 * there too).
 */
export function readReplicaFiles(logDir: string, topic: string): Map<number, Map<bigint, string>> {
  const out = new Map<number, Map<bigint, string>>()
  let dirs: string[] = []
  try {
    dirs = readdirSync(logDir)
  } catch {
    return out
  }
  for (const d of dirs) {
    const m = new RegExp(`^${topic.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}-(\\d+)$`).exec(d)
    if (m === null) continue
    const records = new Map<bigint, string>()
    out.set(Number(m[1]), records)
    const segments = readdirSync(join(logDir, d))
      .filter((f) => f.endsWith('.log'))
      .sort()
    for (const s of segments) {
      const buf = readFileSync(join(logDir, d, s))
      let at = 0
      while (at + LOG_OVERHEAD <= buf.length) {
        let size: number
        try {
          size = batchSizeAt(buf, at)
          if (at + size > buf.length) break
          const batch = decodeBatch(buf, at)
          for (const r of batch.records) records.set(r.offset, r.value?.toString() ?? '<null>')
        } catch {
          break
        }
        at += size
      }
    }
  }
  return out
}

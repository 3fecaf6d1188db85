/**
 * A rolling restart under two Java producers (test/compat/clients/java/RollingProducer.java), one
 * that never retries (retries=0, acks=all, no idempotence) and one with KafkaProducer's defaults,
 * both sending without pause, record i to partition i % n: each node in turn is stopped with
 * SIGTERM, started again, and waited for until it is back in the ISR of every partition; then the
 * producers stop, everything is read back, and each producer's failed sends (with their exceptions
 * and where the restart was when they failed), lost acknowledged records, duplicates and longest
 * waits for an acknowledgement are reported. The same run drives Weir
 * (test/faults/rolling-restart.test.ts) and Apache Kafka (bench/rolling-restart.ts): a target only
 * says how to stop and start its nodes.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { join } from 'node:path'
import type { TopicName } from '../../src/model/index.ts'
import { apis } from '../../src/protocol/index.ts'
import { installKafka } from '../../tools/kafka/kafka.ts'
import { openConnection } from './connection.ts'
import { REPO, waitFor } from './weir-process.ts'

export interface RollingNode {
  readonly id: number
  readonly port: number
  /** SIGTERM, resolved once the process exited. */
  stop(): Promise<void>
  /** Starts the node again on its files and ports, resolved once it serves. */
  start(): Promise<void>
}

export interface RollingTarget {
  readonly name: string
  readonly bootstrap: string
  readonly nodes: readonly RollingNode[]
}

export interface RollingOptions {
  readonly topic?: string
  readonly partitions?: number
  /** The producer's pause between sends (0: none). */
  readonly intervalMs?: number
  /** How long the producer sends before the first stop. */
  readonly warmupMs?: number
  /** How long a node stays down. */
  readonly downMs?: number
  /** How long the producer sends after a node rejoined every ISR, before the next stop. */
  readonly settleMs?: number
  /** Several rolling restarts in a row. */
  readonly rounds?: number
  /**
   * Start a stopped node again only once the others' Metadata names it leader of no partition. A
   * node killed with kill -9 keeps its leaderships until the controller fences it; restarted
   * before that, it is sent the batches clients held for it and answers them NOT_LEADER_OR_FOLLOWER
   * once its registration moved its leaderships (as Kafka's broker does), which says nothing about
   * the new leaders.
   */
  readonly startAfterLeadersMoved?: boolean
  readonly log?: (line: string) => void
}

/** What became of one producer's sends. */
export interface ProducerResult {
  readonly sent: number
  readonly acked: number
  readonly failed: number
  /** Failed sends by exception class. */
  readonly errors: Readonly<Record<string, number>>
  /** Acknowledged records not read back where their ack said. */
  readonly lost: number
  readonly lostSamples: readonly string[]
  /** Records read back more than once. */
  readonly duplicates: number
  readonly read: number
  /** By partition, the longest time between two acknowledgements. */
  readonly ackGapMsMax: Readonly<Record<string, number>>
}

/** Where the restart was when a send failed. */
export type Phase = 'before' | 'stopping' | 'down' | 'starting' | 'rejoining' | 'rejoined'

export interface FailedSend {
  readonly producer: 'noretry' | 'default'
  readonly partition: number
  readonly exception: string
  /** The node last sent SIGTERM and the phase of its restart. */
  readonly node: number
  readonly phase: Phase
  /** Since that SIGTERM. */
  readonly sinceStopMs: number
}

export interface RollingResult {
  readonly sendMs: number
  /** retries=0, acks=all, no idempotence. */
  readonly noretry: ProducerResult
  /** KafkaProducer's defaults (idempotent, acks=all, retries). */
  readonly default: ProducerResult
  readonly failures: readonly FailedSend[]
  /** The restart's steps and the failed sends, in time order. */
  readonly timeline: readonly string[]
}

const JAVA_SOURCE = join(REPO, 'test/compat/clients/java/RollingProducer.java')

function java(libs: string, args: readonly string[], bootstrap: string): ChildProcess {
  return spawn('java', ['-Xmx256m', '-XX:+UseSerialGC', '-cp', `${libs}/*`, JAVA_SOURCE, ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, BOOTSTRAP: bootstrap },
  })
}

/** Runs a driver command to its end and returns its last line (a JSON object). */
async function javaOnce(libs: string, args: readonly string[], bootstrap: string): Promise<string> {
  const child = java(libs, args, bootstrap)
  child.stdin?.end()
  let out = ''
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString()
  })
  child.stderr?.on('data', (d: Buffer) => {
    out += d.toString()
  })
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  if (code !== 0) throw new Error(`RollingProducer ${args.join(' ')} exited with ${code}:\n${out}`)
  return out.trim().split('\n').at(-1) ?? ''
}

/** Every partition's ISR, as the node at `port` answers Metadata. */
async function isrs(port: number, topic: string): Promise<Array<{ leader: number; isr: number[] }>> {
  const conn = await openConnection({ host: '127.0.0.1', port }, 'rolling-restart', 5000)
  try {
    const res = await conn.request(apis.Metadata, 12, {
      topics: [{ name: topic as TopicName }],
      allowAutoTopicCreation: false,
    })
    const t = res.topics[0]
    if (t === undefined || t.errorCode !== 0) throw new Error(`metadata: error ${t?.errorCode}`)
    return t.partitions.map((p) => ({ leader: p.leaderId, isr: [...p.isrNodes] }))
  } finally {
    conn.close()
  }
}

/** Until every node but `stopped` says no partition of `topic` is led by `stopped`. */
async function waitForLeadersMoved(
  nodes: readonly RollingNode[],
  topic: string,
  stopped: number,
  timeoutMs = 60_000,
): Promise<void> {
  await waitFor(
    `no partition of ${topic} led by node ${stopped}`,
    async () => {
      for (const n of nodes) {
        if (n.id === stopped) continue
        const ps = await isrs(n.port, topic)
        if (ps.some((p) => p.leader === stopped)) return undefined
      }
      return true
    },
    timeoutMs,
  )
}

/** Until every running node says every partition has a leader and `ids` all in its ISR. */
async function waitForIsr(
  nodes: readonly RollingNode[],
  topic: string,
  partitions: number,
  ids: readonly number[],
  timeoutMs = 60_000,
): Promise<void> {
  await waitFor(
    `${ids.join(',')} in every ISR of ${topic}`,
    async () => {
      for (const n of nodes) {
        const ps = await isrs(n.port, topic)
        if (ps.length !== partitions) return undefined
        if (!ps.every((p) => p.leader >= 0 && ids.every((id) => p.isr.includes(id)))) return undefined
      }
      return true
    },
    timeoutMs,
  )
}

/** The rolling restart; the producer runs from before the first stop to after the last rejoin. */
export async function rollingRestart(
  target: RollingTarget,
  options: RollingOptions = {},
): Promise<RollingResult> {
  const topic = options.topic ?? 'rolling'
  const partitions = options.partitions ?? 3
  const log = options.log ?? (() => {})
  const libs = installKafka()
  const ids = target.nodes.map((n) => n.id)
  log(`${target.name}: ${await javaOnce(libs, ['create', topic, String(partitions)], target.bootstrap)}`)
  await waitForIsr(target.nodes, topic, partitions, ids)

  const t0 = performance.now()
  const timeline: string[] = []
  const failures: FailedSend[] = []
  let node = 0
  let phase: Phase = 'before'
  let stoppedAt = 0
  const at = (line: string) => {
    const entry = `${Math.round(performance.now() - t0)} ms: ${line}`
    timeline.push(entry)
    log(`${target.name}: ${entry}`)
  }
  const step = (next: Phase, id: number, line: string) => {
    phase = next
    node = id
    at(line)
  }
  const child = java(libs, ['produce', topic, String(options.intervalMs ?? 1)], target.bootstrap)
  let out = ''
  let acked = 0
  let buffered = ''
  child.stdout?.on('data', (d: Buffer) => {
    buffered += d.toString()
    const lines = buffered.split('\n')
    buffered = lines.pop() ?? ''
    for (const line of lines) {
      out += `${line}\n`
      const progress = /^acked (\d+) failed (\d+)/.exec(line)
      if (progress !== null) acked = Number(progress[1])
      const fail = /^fail (\w+) \d+ (\d+) (\w+)/.exec(line)
      if (fail !== null) {
        failures.push({
          producer: fail[1] as FailedSend['producer'],
          partition: Number(fail[2]),
          exception: fail[3]!,
          node,
          phase,
          sinceStopMs: Math.round(performance.now() - stoppedAt),
        })
        at(`${phase} node ${node}: ${line}`)
      }
    }
  })
  child.stderr?.on('data', (d: Buffer) => {
    out += d.toString()
  })
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
  const running = () => child.exitCode === null
  /** Resolves once the producer acknowledged `more` records more than now. */
  const progress = async (more: number, what: string) => {
    const from = acked
    await waitFor(`${what}: the producer acknowledging`, () => {
      if (!running()) throw new Error(`the producer exited:\n${out}`)
      return acked >= from + more ? true : undefined
    })
  }
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
  try {
    await progress(200, 'start')
    await sleep(options.warmupMs ?? 2000)
    for (let round = 0; round < (options.rounds ?? 1); round++) {
      for (const n of target.nodes) {
        stoppedAt = performance.now()
        step('stopping', n.id, `SIGTERM node ${n.id}`)
        await n.stop()
        step('down', n.id, `node ${n.id} exited`)
        await sleep(options.downMs ?? 1000)
        if (options.startAfterLeadersMoved === true) {
          await waitForLeadersMoved(target.nodes, topic, n.id)
          at(`no partition led by node ${n.id}`)
        }
        step('starting', n.id, `node ${n.id} starting`)
        await n.start()
        step('rejoining', n.id, `node ${n.id} started`)
        await waitForIsr(target.nodes, topic, partitions, ids)
        step('rejoined', n.id, `node ${n.id} in every ISR`)
        await progress(100, `after node ${n.id}`)
        await sleep(options.settleMs ?? 2000)
      }
    }
  } catch (e) {
    child.kill('SIGKILL')
    throw e
  }
  child.stdin?.end('stop\n')
  const code = await exited
  if (buffered !== '') out += buffered
  if (code !== 0) throw new Error(`the producer exited with ${code}:\n${out}`)
  const summary = JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as Omit<
    RollingResult,
    'timeline' | 'failures'
  >
  return { ...summary, failures, timeline }
}

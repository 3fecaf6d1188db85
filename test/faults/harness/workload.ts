/**
 * The workload: real kafkajs clients against the cluster while faults happen.
 *
 * - One idempotent (acks=all, one request in flight) producer per partition, each sending small
 *   batches to its own partition in a loop. Every value is unique (`<session>:<partition>:<seq>`,
 *   where a session is one producer instance) and sent once only: a failed send is recorded as
 *   attempted, the producer is thrown away and a new one (a new producer id) carries on. So a value
 *   read twice is a duplicate the system made, never a retry of ours. Every acknowledgement is
 *   recorded with the offset the broker gave it (base offset + index in the batch) and its time.
 * - A consumer group (kafkajs, auto-commit) reads the topic from the beginning; every record it is
 *   handed is recorded (partition, offset, value).
 * - A poller reads the group's committed offsets (OffsetFetch through the admin client) every
 *   `commitPollMs`, to check they never move backwards.
 *
 * Payload contents are seeded (batch sizes, pauses); timing is real.
 */
import kafkajs from 'kafkajs'
import { SeededRandom } from '../../../src/io/index.ts'
import { waitFor } from '../../support/weir-process.ts'

const { Kafka, logLevel } = kafkajs

export interface Ack {
  readonly partition: number
  readonly offset: bigint
  readonly value: string
  /** ms since the workload started. */
  readonly at: number
}

export interface WorkloadOptions {
  readonly brokers: readonly string[]
  readonly topic: string
  readonly partitions: number
  readonly replicationFactor: number
  readonly insyncReplicasMin: number
  readonly seed: number
  readonly groupId: string
  /** Records per send: 1..batchMax. */
  readonly batchMax?: number
  readonly commitPollMs?: number
  /** Pause between a partition's sends, ms (default 20): bounds the load on a small machine. */
  readonly sendIntervalMs?: number
  readonly log?: (line: string) => void
}

export interface WorkloadResult {
  readonly acks: Ack[]
  /** Values sent whose send failed or whose outcome is unknown (they may or may not be in the log). */
  readonly attempted: Set<string>
  /** Every record the group's consumers were handed: "partition/offset" -> values seen there. */
  readonly consumed: Map<string, Set<string>>
  /** Committed offsets per partition in the order observed (only changes are kept), with when (ms). */
  readonly commits: Map<number, Array<{ offset: bigint; at: number }>>
  /** Sends that failed. */
  readonly sendErrors: number
  readonly startedAt: number
}

function kafkaClient(brokers: readonly string[], clientId: string) {
  return new Kafka({
    clientId,
    brokers: [...brokers],
    logLevel: logLevel.NOTHING,
    connectionTimeout: 3_000,
    requestTimeout: 10_000,
    retry: { retries: 6, initialRetryTime: 100, maxRetryTime: 2_000 },
  })
}

export async function createTopic(options: WorkloadOptions): Promise<void> {
  const admin = kafkaClient(options.brokers, 'faults-admin').admin()
  await admin.connect()
  try {
    await admin.createTopics({
      waitForLeaders: true,
      topics: [
        {
          topic: options.topic,
          numPartitions: options.partitions,
          replicationFactor: options.replicationFactor,
          configEntries: [{ name: 'min.insync.replicas', value: String(options.insyncReplicasMin) }],
        },
      ],
    })
  } finally {
    await admin.disconnect()
  }
}

export class Workload {
  readonly options: WorkloadOptions
  readonly #acks: Ack[] = []
  readonly #attempted = new Set<string>()
  readonly #consumed = new Map<string, Set<string>>()
  readonly #commits = new Map<number, Array<{ offset: bigint; at: number }>>()
  #sendErrors = 0
  #stopping = false
  #startedAt = 0
  readonly #loops: Promise<void>[] = []
  #consumer: kafkajs.Consumer | null = null
  #admin: kafkajs.Admin | null = null
  #session = 0

  constructor(options: WorkloadOptions) {
    this.options = options
  }

  get now(): number {
    return performance.now() - this.#startedAt
  }

  get acked(): number {
    return this.#acks.length
  }

  /** Last ack time per partition (ms since start), or undefined. */
  lastAck(partition: number): number | undefined {
    for (let i = this.#acks.length - 1; i >= 0; i--)
      if (this.#acks[i]!.partition === partition) return this.#acks[i]!.at
    return undefined
  }

  async start(): Promise<void> {
    this.#startedAt = performance.now()
    for (let p = 0; p < this.options.partitions; p++) this.#loops.push(this.#produceLoop(p))
    await this.#startConsumer()
    this.#loops.push(this.#pollCommits())
  }

  /** Stops producing (the consumer keeps reading until `finish`). */
  async stopProducing(): Promise<void> {
    this.#stopping = true
    await Promise.all(this.#loops)
  }

  /**
   * Waits until the group has been handed every offset below `ends` (per partition) or `timeoutMs`
   * passed; then stops the consumer. Returns the partitions that did not drain.
   */
  async drain(ends: Map<number, bigint>, timeoutMs: number): Promise<number[]> {
    const deadline = performance.now() + timeoutMs
    const missing = () => {
      const out: number[] = []
      for (const [p, end] of ends) {
        for (let o = 0n; o < end; o++) {
          if (!this.#consumed.has(`${p}/${o}`)) {
            out.push(p)
            break
          }
        }
      }
      return out
    }
    let left = missing()
    while (left.length > 0 && performance.now() < deadline) {
      await new Promise((r) => setTimeout(r, 500))
      left = missing()
    }
    await this.#consumer?.disconnect().catch(() => {})
    await this.#admin?.disconnect().catch(() => {})
    return left
  }

  /** Stops everything now (after a failure): producers, the consumer, the poller. */
  async abort(): Promise<void> {
    this.#stopping = true
    await this.#consumer?.disconnect().catch(() => {})
    await this.#admin?.disconnect().catch(() => {})
    await Promise.allSettled(this.#loops)
  }

  result(): WorkloadResult {
    return {
      acks: this.#acks,
      attempted: this.#attempted,
      consumed: this.#consumed,
      commits: this.#commits,
      sendErrors: this.#sendErrors,
      startedAt: this.#startedAt,
    }
  }

  async #produceLoop(partition: number): Promise<void> {
    const random = new SeededRandom(BigInt(this.options.seed) * 1000n + BigInt(partition))
    const batchMax = this.options.batchMax ?? 4
    let lastConnectError = ''
    while (!this.#stopping) {
      const session = `s${++this.#session}`
      const producer = kafkaClient(this.options.brokers, `faults-producer-${partition}`).producer({
        idempotent: true,
        maxInFlightRequests: 1,
        allowAutoTopicCreation: false,
        retry: { retries: 6, initialRetryTime: 100, maxRetryTime: 2_000 },
      })
      try {
        await producer.connect()
        lastConnectError = ''
      } catch (e) {
        // Logged when it changes: a producer that cannot even start (InitProducerId) is a stall too.
        const message = (e as Error).message.slice(0, 120)
        if (message !== lastConnectError) this.options.log?.(`connect p${partition} ${session}: ${message}`)
        lastConnectError = message
        await producer.disconnect().catch(() => {})
        await new Promise((r) => setTimeout(r, 250))
        continue
      }
      let seq = 0
      try {
        while (!this.#stopping) {
          const n = 1 + random.int(batchMax)
          const values = Array.from({ length: n }, () => `${session}:${partition}:${seq++}`)
          for (const v of values) this.#attempted.add(v)
          const res = await producer.send({
            topic: this.options.topic,
            acks: -1,
            messages: values.map((value) => ({ partition, value })),
          })
          const meta = res.find((r) => r.partition === partition)
          if (meta === undefined || meta.baseOffset === undefined || meta.errorCode !== 0)
            throw new Error(`no offset in the acknowledgement: ${JSON.stringify(res)}`)
          const base = BigInt(meta.baseOffset)
          const at = this.now
          values.forEach((value, i) => {
            this.#attempted.delete(value)
            this.#acks.push({ partition, offset: base + BigInt(i), value, at })
          })
          await new Promise((r) => setTimeout(r, this.options.sendIntervalMs ?? 20))
        }
      } catch (e) {
        this.#sendErrors++
        this.options.log?.(`produce p${partition} ${session}: ${(e as Error).message.slice(0, 120)}`)
      } finally {
        await producer.disconnect().catch(() => {})
      }
      if (!this.#stopping) await new Promise((r) => setTimeout(r, 100 + random.int(200)))
    }
  }

  async #startConsumer(): Promise<void> {
    const kafka = kafkaClient(this.options.brokers, 'faults-consumer')
    const consumer = kafka.consumer({
      groupId: this.options.groupId,
      sessionTimeout: 10_000,
      heartbeatInterval: 1_000,
      retry: { retries: 1_000_000, initialRetryTime: 200, maxRetryTime: 2_000 },
    })
    this.#consumer = consumer
    await consumer.connect()
    await consumer.subscribe({ topic: this.options.topic, fromBeginning: true })
    await consumer.run({
      autoCommit: true,
      autoCommitInterval: 500,
      eachMessage: async ({ partition, message }) => {
        const key = `${partition}/${message.offset}`
        let seen = this.#consumed.get(key)
        if (seen === undefined) {
          seen = new Set()
          this.#consumed.set(key, seen)
        }
        seen.add(message.value?.toString() ?? '<null>')
      },
    })
    this.#admin = kafka.admin()
    await this.#admin.connect()
  }

  #noteCommit(partition: number, offset: bigint): void {
    const list = this.#commits.get(partition) ?? []
    if (list.length === 0 || list[list.length - 1]!.offset !== offset) list.push({ offset, at: this.now })
    this.#commits.set(partition, list)
  }

  async #pollCommits(): Promise<void> {
    const every = this.options.commitPollMs ?? 1_000
    while (!this.#stopping) {
      try {
        const res = await this.#admin!.fetchOffsets({
          groupId: this.options.groupId,
          topics: [this.options.topic],
        })
        for (const t of res)
          for (const p of t.partitions) {
            if (p.offset === '-1') continue
            this.#noteCommit(p.partition, BigInt(p.offset))
          }
      } catch {
        // the coordinator may be down right now
      }
      await new Promise((r) => setTimeout(r, every))
    }
  }

  /** Committed offsets after healing (one more read, for the final drain check). */
  async pollCommitsOnce(): Promise<void> {
    try {
      const res = await this.#admin!.fetchOffsets({
        groupId: this.options.groupId,
        topics: [this.options.topic],
      })
      for (const t of res)
        for (const p of t.partitions) {
          if (p.offset === '-1') continue
          this.#noteCommit(p.partition, BigInt(p.offset))
        }
    } catch {
      // reported as not drained by the caller
    }
  }
}

/** A fresh reader after healing: every record of every partition from offset 0 to its end. */
export async function readAll(
  brokers: readonly string[],
  topic: string,
  timeoutMs: number,
): Promise<{ ends: Map<number, bigint>; records: Map<number, Map<bigint, string[]>> }> {
  const kafka = kafkaClient(brokers, 'faults-checker')
  const admin = kafka.admin()
  await admin.connect()
  const ends = new Map<number, bigint>()
  try {
    // Right after healing a leader may still be moving: retry for a while.
    const offsets = await waitFor('the log end offsets', () => admin.fetchTopicOffsets(topic), timeoutMs)
    for (const o of offsets) ends.set(o.partition, BigInt(o.high))
  } finally {
    await admin.disconnect()
  }
  const records = new Map<number, Map<bigint, string[]>>()
  for (const p of ends.keys()) records.set(p, new Map())
  const consumer = kafka.consumer({ groupId: `faults-checker-${Date.now()}`, maxBytesPerPartition: 1 << 20 })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const done = () => {
    for (const [p, end] of ends) {
      const m = records.get(p)!
      if (end > 0n && !m.has(end - 1n)) return false
    }
    return true
  }
  let resolveDone: () => void = () => {}
  const finished = new Promise<void>((r) => {
    resolveDone = r
  })
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      const m = records.get(partition)!
      const o = BigInt(message.offset)
      const list = m.get(o) ?? []
      list.push(message.value?.toString() ?? '<null>')
      m.set(o, list)
      if (done()) resolveDone()
    },
  })
  if (!done()) {
    let timer: NodeJS.Timeout | undefined
    await Promise.race([finished, new Promise((r) => (timer = setTimeout(r, timeoutMs)))])
    clearTimeout(timer)
  }
  await consumer.disconnect()
  return { ends, records }
}

/**
 * Sends partition leaders' ISR changes to the active controller (KIP-497 AlterPartition), as
 * Kafka's AlterPartitionManager: one request in flight, carrying every change queued meanwhile;
 * a failed request (unreachable controller, a top-level error) is retried after a backoff while
 * its changes are still wanted. It reaches the controller only through the `send` port.
 */
import type { Clock } from '../io/index.ts'
import { type BrokerId, type TopicName, Uuid } from '../model/index.ts'
import {
  type AlterPartitionRequestData,
  type AlterPartitionResponseData,
  ErrorCode,
  errorCodeOf,
} from '../protocol/index.ts'
import type { IsrChangeAnswer, PendingIsrChange } from './partition.ts'

export interface AlterPartitionManagerOptions {
  readonly nodeId: BrokerId
  /** This broker's current epoch (its registration's), -1 before it registered. */
  readonly brokerEpoch: () => bigint
  /** The request to the active controller; rejects when none could be reached. */
  readonly send: (
    req: AlterPartitionRequestData.AlterPartitionRequest,
  ) => Promise<AlterPartitionResponseData.AlterPartitionResponseIn>
  readonly clock: Clock
  /** Wait before resending after a failure. */
  readonly retryBackoffMs: number
  readonly log?: (level: 'info' | 'warn' | 'error', message: string) => void
}

export interface IsrChangeRequest {
  readonly topic: TopicName
  readonly topicId: Uuid
  readonly partition: number
  readonly change: PendingIsrChange
  /** Whether the change is still wanted (the partition still has it pending). */
  readonly wanted: () => boolean
  readonly answer: (a: IsrChangeAnswer) => void
}

export class AlterPartitionManager {
  readonly #o: AlterPartitionManagerOptions
  readonly #queued = new Map<string, IsrChangeRequest>()
  #inFlight = false
  #closed = false

  constructor(options: AlterPartitionManagerOptions) {
    this.#o = options
  }

  /** Queues a change (replacing a queued one of the same partition) and sends when idle. */
  submit(r: IsrChangeRequest): void {
    if (this.#closed) return
    this.#queued.set(`${r.topicId}:${r.partition}`, r)
    this.#maybeSend()
  }

  #maybeSend(): void {
    if (this.#inFlight || this.#closed) return
    for (const [k, r] of this.#queued) if (!r.wanted()) this.#queued.delete(k)
    if (this.#queued.size === 0) return
    const batch = [...this.#queued.values()]
    this.#queued.clear()
    this.#inFlight = true
    void this.#send(batch).finally(() => {
      this.#inFlight = false
      this.#maybeSend()
    })
  }

  async #send(batch: readonly IsrChangeRequest[]): Promise<void> {
    const byTopic = new Map<Uuid, { topicId: Uuid; partitions: IsrChangeRequest[] }>()
    for (const r of batch) {
      const t = byTopic.get(r.topicId) ?? { topicId: r.topicId, partitions: [] }
      t.partitions.push(r)
      byTopic.set(r.topicId, t)
    }
    const req: AlterPartitionRequestData.AlterPartitionRequest = {
      brokerId: this.#o.nodeId,
      brokerEpoch: this.#o.brokerEpoch(),
      topics: [...byTopic.values()].map((t) => ({
        topicId: t.topicId,
        partitions: t.partitions.map((r) => ({
          partitionIndex: r.partition,
          leaderEpoch: r.change.leaderEpoch,
          // v3's form (Weir's controllers serve v2-3; an encoder refuses newIsr at v3).
          newIsr: [],
          newIsrWithEpochs: r.change.members.map((m) => ({
            brokerId: m.brokerId,
            brokerEpoch: m.brokerEpoch,
          })),
          leaderRecoveryState: r.change.leaderRecoveryState,
          partitionEpoch: r.change.partitionEpoch,
        })),
      })),
    }
    let res: AlterPartitionResponseData.AlterPartitionResponseIn | null = null
    try {
      res = await this.#o.send(req)
    } catch (e) {
      this.#o.log?.('warn', `AlterPartition failed: ${(e as Error).message}; retrying`)
    }
    const topLevel = res?.errorCode ?? ErrorCode.None
    if (res === null || topLevel !== ErrorCode.None) {
      if (res !== null) this.#o.log?.('warn', `AlterPartition answered error ${topLevel}; retrying`)
      await this.#backoff()
      for (const r of batch) {
        const k = `${r.topicId}:${r.partition}`
        if (!this.#queued.has(k) && r.wanted()) this.#queued.set(k, r)
      }
      return
    }
    const answered = new Set<IsrChangeRequest>()
    for (const t of res.topics ?? []) {
      const topic = byTopic.get(t.topicId ?? Uuid(''))
      if (topic === undefined) continue
      for (const p of t.partitions ?? []) {
        const r = topic.partitions.find((x) => x.partition === p.partitionIndex)
        if (r === undefined || answered.has(r)) continue
        answered.add(r)
        const errorCode = errorCodeOf(p.errorCode ?? ErrorCode.None)
        if (errorCode !== ErrorCode.None)
          this.#o.log?.('info', `AlterPartition ${r.topic}-${r.partition}: error ${errorCode}`)
        r.answer({
          errorCode,
          leaderEpoch: p.leaderEpoch ?? -1,
          partitionEpoch: p.partitionEpoch ?? -1,
          isr: p.isr ?? [],
        })
      }
    }
    // A partition the controller did not answer is retried.
    const missing = batch.filter((r) => !answered.has(r))
    if (missing.length > 0) {
      await this.#backoff()
      for (const r of missing) if (r.wanted()) this.#queued.set(`${r.topicId}:${r.partition}`, r)
    }
  }

  #backoff(): Promise<void> {
    return new Promise<void>((resolve) => this.#o.clock.setTimer(this.#o.retryBackoffMs, resolve))
  }

  close(): void {
    this.#closed = true
    this.#queued.clear()
  }
}

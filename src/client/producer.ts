/**
 * A producer: records are appended per partition, encoded into one record batch per partition
 * (with the chosen compression) when the batch is full, its linger time is up, or on flush; the
 * batches for one leader go out in one Produce request, several requests in flight per connection.
 * A batch that fails with a retriable error (leader moved, connection lost) is re-sent as the same
 * bytes to the new leader until the delivery timeout. Not idempotent: a retry after a lost response
 * can duplicate, and retries can reorder batches of one partition (as Kafka's producer with
 * `enable.idempotence=false` and several requests in flight).
 */
import type { TimerHandle } from '../io/index.ts'
import { TopicName } from '../model/index.ts'
import {
  apis,
  Compression,
  type CompressionCodec,
  ErrorCode,
  encodeBatch,
  type RecordHeaderInput,
  type RecordInput,
} from '../protocol/index.ts'
import { type ClusterClient, isRetriable, type TopicInfo } from './cluster-client.ts'
import { KafkaError } from './kafka-error.ts'
import { murmur2 } from './murmur2.ts'

export interface ProducerOptions {
  /** 0, 1 or -1 (all); default -1. */
  readonly acks?: number
  readonly compression?: CompressionCodec
  /** `linger.ms`; default 5 (Kafka 4.0's). */
  readonly lingerMs?: number
  /** `batch.size`: a partition's batch is sent once its records reach this many bytes; default 256 KiB. */
  readonly batchBytes?: number
  /** Produce requests in flight per leader; default 5. */
  readonly inFlightMax?: number
  /** The Produce request's timeoutMs; default 30000. */
  readonly requestTimeoutMs?: number
  /** `delivery.timeout.ms`: how long a batch is retried; default 120000. */
  readonly deliveryTimeoutMs?: number
}

export interface ProducerRecord {
  readonly key?: Buffer | null
  readonly value: Buffer | null
  readonly headers?: readonly RecordHeaderInput[]
  /** Create time in ms; default now. */
  readonly timestamp?: bigint
}

export interface Delivered {
  readonly topic: string
  readonly partition: number
  /** The record's offset, or -1 with acks=0. */
  readonly offset: bigint
}

export type DeliveryCallback = (error: Error | null, delivered: Delivered | null) => void

interface Accumulating {
  readonly topic: string
  readonly partition: number
  records: RecordInput[]
  callbacks: Array<DeliveryCallback | undefined>
  bytes: number
  timer: TimerHandle | null
}

interface Ready {
  readonly topic: string
  readonly partition: number
  readonly bytes: Buffer
  readonly callbacks: Array<DeliveryCallback | undefined>
  readonly deadline: number
  attempts: number
}

export const COMPRESSION_NAMES: Readonly<Record<string, CompressionCodec>> = {
  none: Compression.none,
  gzip: Compression.gzip,
  snappy: Compression.snappy,
  lz4: Compression.lz4,
  zstd: Compression.zstd,
}

/** Kafka's default partitioner for a keyed record: murmur2 of the key, positive, modulo the count. */
export function partitionForKey(key: Uint8Array, partitions: number): number {
  return (murmur2(key) & 0x7fffffff) % partitions
}

export class Producer {
  readonly #client: ClusterClient
  readonly #acks: number
  readonly #compression: CompressionCodec
  readonly #lingerMs: number
  readonly #batchBytes: number
  readonly #inFlightMax: number
  readonly #requestTimeoutMs: number
  readonly #deliveryTimeoutMs: number
  readonly #accumulating = new Map<string, Accumulating>()
  /** Encoded batches waiting for a free request slot, per leader (-1: leader unknown). */
  readonly #ready: Ready[] = []
  readonly #inFlight = new Map<number, number>()
  /** Records appended and not yet acknowledged (or failed). */
  #buffered = 0
  #idleWaiters: Array<() => void> = []
  #roundRobin = 0
  #closed = false

  constructor(client: ClusterClient, options: ProducerOptions = {}) {
    this.#client = client
    this.#acks = options.acks ?? -1
    this.#compression = options.compression ?? Compression.none
    this.#lingerMs = options.lingerMs ?? 5
    this.#batchBytes = options.batchBytes ?? 256 * 1024
    this.#inFlightMax = options.inFlightMax ?? 5
    this.#requestTimeoutMs = options.requestTimeoutMs ?? 30_000
    this.#deliveryTimeoutMs = options.deliveryTimeoutMs ?? 120_000
    if (![0, 1, -1].includes(this.#acks))
      throw new KafkaError(ErrorCode.InvalidRequiredAcks, `acks must be 0, 1 or all (-1), not ${this.#acks}`)
  }

  /** Records appended and not yet acknowledged. */
  get buffered(): number {
    return this.#buffered
  }

  /** Loads a topic's partitions so that `append` can route to it. */
  async prepare(topic: string): Promise<TopicInfo> {
    return this.#client.topic(topic)
  }

  /**
   * Appends a record (the topic must be prepared). Without a partition: murmur2 of the key, or
   * round-robin over partitions for records without a key. `onDelivery` runs once, when acked or failed.
   */
  append(topic: string, record: ProducerRecord, onDelivery?: DeliveryCallback, partition?: number): void {
    if (this.#closed) throw new Error('producer closed')
    const info = this.#client.metadataCache?.topics.get(topic)
    if (info === undefined || info.errorCode !== ErrorCode.None)
      throw new KafkaError(ErrorCode.UnknownTopicOrPartition, `topic '${topic}' is not prepared`)
    const count = info.partitions.length
    const p =
      partition ??
      (record.key !== undefined && record.key !== null
        ? partitionForKey(record.key, count)
        : this.#roundRobin++ % count)
    if (p < 0 || p >= count)
      throw new KafkaError(ErrorCode.UnknownTopicOrPartition, `topic '${topic}' has no partition ${p}`)
    const id = `${topic}\u0000${p}`
    let acc = this.#accumulating.get(id)
    if (acc === undefined) {
      acc = { topic, partition: p, records: [], callbacks: [], bytes: 0, timer: null }
      this.#accumulating.set(id, acc)
    }
    acc.records.push({
      key: record.key ?? null,
      value: record.value,
      headers: record.headers ?? [],
      timestamp: record.timestamp ?? BigInt(this.#client.clock.nowMs()),
    })
    acc.callbacks.push(onDelivery)
    acc.bytes += 16 + (record.key?.length ?? 0) + (record.value?.length ?? 0)
    for (const h of record.headers ?? []) acc.bytes += h.key.length + (h.value?.length ?? 0) + 4
    this.#buffered++
    if (acc.bytes >= this.#batchBytes) this.#seal(id, acc)
    else if (acc.timer === null) {
      const a = acc
      acc.timer = this.#client.clock.setTimer(this.#lingerMs, () => {
        a.timer = null
        if (this.#accumulating.get(id) === a) this.#seal(id, a)
      })
    }
  }

  /** Appends and resolves once the record is acknowledged. */
  async send(topic: string, record: ProducerRecord, partition?: number): Promise<Delivered> {
    await this.prepare(topic)
    return new Promise((resolve, reject) => {
      this.append(topic, record, (e, d) => (e !== null ? reject(e) : resolve(d!)), partition)
    })
  }

  /** Sends everything appended and resolves once nothing is buffered. */
  async flush(): Promise<void> {
    for (const [id, acc] of this.#accumulating) this.#seal(id, acc)
    while (this.#buffered > 0) await new Promise<void>((resolve) => this.#idleWaiters.push(resolve))
  }

  /** Resolves once at most `records` are buffered (backpressure for fast writers). */
  async waitBelow(records: number): Promise<void> {
    while (this.#buffered > records) {
      for (const [id, acc] of this.#accumulating) if (acc.bytes >= this.#batchBytes / 2) this.#seal(id, acc)
      await new Promise<void>((resolve) => this.#idleWaiters.push(resolve))
    }
  }

  async close(): Promise<void> {
    await this.flush()
    this.#closed = true
  }

  #seal(id: string, acc: Accumulating): void {
    this.#accumulating.delete(id)
    if (acc.timer !== null) this.#client.clock.clearTimer(acc.timer)
    if (acc.records.length === 0) return
    let bytes: Buffer
    try {
      bytes = encodeBatch({ records: acc.records, compression: this.#compression })
    } catch (e) {
      this.#complete(acc.callbacks, e as Error, acc.topic, acc.partition, -1n)
      return
    }
    this.#ready.push({
      topic: acc.topic,
      partition: acc.partition,
      bytes,
      callbacks: acc.callbacks,
      deadline: this.#client.clock.monotonicMs() + this.#deliveryTimeoutMs,
      attempts: 0,
    })
    this.#drain()
  }

  /** Sends ready batches, one Produce request per leader with a free slot. */
  #drain(): void {
    if (this.#ready.length === 0) return
    const cache = this.#client.metadataCache
    const byLeader = new Map<number, Ready[]>()
    const keep: Ready[] = []
    const unknown: Ready[] = []
    for (const r of this.#ready) {
      const leader =
        cache?.topics.get(r.topic)?.partitions.find((p) => p.partition === r.partition)?.leader ?? -1
      if (leader < 0) {
        unknown.push(r)
        continue
      }
      if ((this.#inFlight.get(leader) ?? 0) >= this.#inFlightMax) {
        keep.push(r)
        continue
      }
      let list = byLeader.get(leader)
      if (list === undefined) {
        list = []
        byLeader.set(leader, list)
      }
      // One batch per partition per request.
      if (list.some((x) => x.topic === r.topic && x.partition === r.partition)) keep.push(r)
      else list.push(r)
    }
    this.#ready.splice(0, this.#ready.length, ...keep)
    if (unknown.length > 0) this.#retryLater(unknown, new KafkaError(ErrorCode.LeaderNotAvailable))
    for (const [leader, batches] of byLeader) void this.#produce(leader, batches)
  }

  async #produce(leader: number, batches: Ready[]): Promise<void> {
    this.#inFlight.set(leader, (this.#inFlight.get(leader) ?? 0) + 1)
    const topics = new Map<string, Ready[]>()
    for (const b of batches) {
      let list = topics.get(b.topic)
      if (list === undefined) {
        list = []
        topics.set(b.topic, list)
      }
      list.push(b)
      b.attempts++
    }
    const body = {
      transactionalId: null,
      acks: this.#acks,
      timeoutMs: this.#requestTimeoutMs,
      topicData: [...topics].map(([name, list]) => ({
        name: TopicName(name),
        partitionData: list.map((b) => ({ index: b.partition, records: b.bytes })),
      })),
    }
    const failed: Ready[] = []
    let failure: Error | null = null
    try {
      const connection = await this.#client.broker(leader)
      const version = connection.versionFor(apis.Produce)
      if (version === undefined)
        throw new KafkaError(ErrorCode.UnsupportedVersion, 'the broker serves no Produce version')
      if (this.#acks === 0) {
        connection.send(apis.Produce, version, body)
        for (const b of batches) this.#complete(b.callbacks, null, b.topic, b.partition, -1n)
      } else {
        const response = await connection.request(apis.Produce, version, body, {
          timeoutMs: this.#requestTimeoutMs + 5000,
        })
        for (const b of batches) {
          const pr = response.responses
            .find((t) => t.name === b.topic)
            ?.partitionResponses.find((p) => p.index === b.partition)
          const code = pr?.errorCode ?? ErrorCode.UnknownServerError
          if (code === 0) this.#complete(b.callbacks, null, b.topic, b.partition, pr!.baseOffset)
          else {
            const e = new KafkaError(code, pr?.errorMessage ?? null)
            if (isRetriable(e)) {
              failed.push(b)
              failure = e
            } else this.#complete(b.callbacks, e, b.topic, b.partition, -1n)
          }
        }
      }
    } catch (e) {
      failed.push(...batches)
      failure = e as Error
      if (!isRetriable(e)) {
        for (const b of failed.splice(0)) this.#complete(b.callbacks, e as Error, b.topic, b.partition, -1n)
      }
    } finally {
      this.#inFlight.set(leader, (this.#inFlight.get(leader) ?? 1) - 1)
    }
    if (failed.length > 0) this.#retryLater(failed, failure!)
    this.#drain()
  }

  /** After a retriable failure: refresh metadata, then queue the batches again (or fail them when out of time). */
  #retryLater(batches: Ready[], error: Error): void {
    const now = this.#client.clock.monotonicMs()
    const retry: Ready[] = []
    for (const b of batches) {
      if (now >= b.deadline || this.#closed) this.#complete(b.callbacks, error, b.topic, b.partition, -1n)
      else retry.push(b)
    }
    if (retry.length === 0) return
    const backoff = Math.min(100 * 2 ** Math.min(...retry.map((b) => b.attempts)), 1000)
    this.#client.clock.setTimer(backoff, () => {
      this.#client
        .refresh()
        .catch(() => {})
        .finally(() => {
          this.#ready.push(...retry)
          this.#drain()
        })
    })
  }

  #complete(
    callbacks: ReadonlyArray<DeliveryCallback | undefined>,
    error: Error | null,
    topic: string,
    partition: number,
    baseOffset: bigint,
  ): void {
    for (let i = 0; i < callbacks.length; i++) {
      const cb = callbacks[i]
      if (cb === undefined) continue
      try {
        if (error !== null) cb(error, null)
        else cb(null, { topic, partition, offset: baseOffset < 0n ? -1n : baseOffset + BigInt(i) })
      } catch {
        // A callback's own failure is not the producer's.
      }
    }
    this.#buffered -= callbacks.length
    const waiters = this.#idleWaiters.splice(0)
    for (const w of waiters) w()
  }
}

/**
 * A fetch loop over assigned partitions: one Fetch per leader per round, all leaders in parallel,
 * positions advanced from the batch headers alone (records stay bytes until a caller decodes them),
 * leaders re-resolved when they move. Offsets by time or end through ListOffsets.
 */
import { BrokerId, TopicName } from '../model/index.ts'
import {
  apis,
  BATCH_HEADER_BYTES,
  batchSizeAt,
  DECOMPRESSED_BYTES_MAX_DEFAULT,
  decodeBatch,
  ErrorCode,
  isControl,
  type KafkaRecord,
  LOG_OVERHEAD,
  lastOffsetOf,
  readBatchHeader,
} from '../protocol/index.ts'
import { type ClusterClient, isRetriable } from './cluster-client.ts'
import { KafkaError } from './kafka-error.ts'

/** ListOffsets timestamps with a meaning. */
export const EARLIEST = -2n
export const LATEST = -1n
/** Kafka's replica id of a consumer's Fetch and ListOffsets (FetchRequest.CONSUMER_REPLICA_ID). */
const CONSUMER_REPLICA_ID = BrokerId(-1)

export interface TopicPartitionOffset {
  readonly topic: string
  readonly partition: number
  readonly offset: bigint
}

/**
 * ListOffsets for each partition at `timestamp` (EARLIEST, LATEST, or ms: the first offset whose
 * timestamp is at or after it; the end offset when there is none). Routed to each leader.
 */
export async function listOffsets(
  client: ClusterClient,
  partitions: ReadonlyArray<{ topic: string; partition: number; timestamp: bigint }>,
): Promise<TopicPartitionOffset[]> {
  return client.retrying(async () => {
    const byLeader = new Map<number, typeof partitions>()
    for (const p of partitions) {
      const leader = await client.leaderOf(p.topic, p.partition)
      byLeader.set(leader, [...(byLeader.get(leader) ?? []), p])
    }
    const out: TopicPartitionOffset[] = []
    await Promise.all(
      [...byLeader].map(async ([leader, list]) => {
        const topics = new Map<string, { partitionIndex: number; timestamp: bigint }[]>()
        for (const p of list)
          topics.set(p.topic, [
            ...(topics.get(p.topic) ?? []),
            { partitionIndex: p.partition, timestamp: p.timestamp },
          ])
        const { response } = await client.request(
          apis.ListOffsets,
          {
            replicaId: CONSUMER_REPLICA_ID,
            isolationLevel: 0,
            topics: [...topics].map(([name, ps]) => ({
              name: TopicName(name),
              partitions: ps.map((p) => ({ ...p, currentLeaderEpoch: -1 })),
            })),
          },
          { to: leader, maxVersion: 8 },
        )
        for (const t of response.topics) {
          for (const p of t.partitions) {
            if (p.errorCode !== ErrorCode.None)
              throw new KafkaError(p.errorCode, `ListOffsets ${t.name}-${p.partitionIndex}`)
            let offset = p.offset
            if (offset < 0n) {
              // No record at or after the time: the end.
              const [end] = await listOffsets(client, [
                { topic: t.name, partition: p.partitionIndex, timestamp: LATEST },
              ])
              offset = end!.offset
            }
            out.push({ topic: t.name, partition: p.partitionIndex, offset })
          }
        }
      }),
    )
    return out
  })
}

export interface FetchedPartition {
  readonly topic: string
  readonly partition: number
  /** The position the fetch asked from. */
  readonly fetchOffset: bigint
  /** Record batches as the broker sent them (the first may start before fetchOffset). */
  readonly records: Buffer
  readonly highWatermark: bigint
  readonly logStartOffset: bigint
}

export interface FetcherOptions {
  /** `fetch.max.wait.ms`; default 500. */
  readonly maxWaitMs?: number
  /** `fetch.min.bytes`; default 1. */
  readonly minBytes?: number
  /** `fetch.max.bytes`; default 50 MiB. */
  readonly maxBytes?: number
  /** `max.partition.fetch.bytes`; default 1 MiB. */
  readonly partitionMaxBytes?: number
  /** On OFFSET_OUT_OF_RANGE: 'earliest', 'latest', or 'error' (throw); default 'error'. */
  readonly resetPolicy?: 'earliest' | 'latest' | 'error'
  /**
   * How long some partition may keep failing with retriable errors (no leader, leader moved, broker
   * unreachable) before `fetch` throws the last of them; default: retry forever.
   */
  readonly stallTimeoutMs?: number
}

export class Fetcher {
  readonly #client: ClusterClient
  readonly #o: Required<FetcherOptions>
  readonly #positions = new Map<string, TopicPartitionOffset>()
  /** Since when rounds keep meeting retriable errors, and the last one. */
  #stalledSince: number | null = null
  #lastError: unknown = null

  constructor(client: ClusterClient, options: FetcherOptions = {}) {
    this.#client = client
    this.#o = {
      maxWaitMs: 500,
      minBytes: 1,
      maxBytes: 50 * 1024 * 1024,
      partitionMaxBytes: 1024 * 1024,
      resetPolicy: 'error',
      stallTimeoutMs: Number.POSITIVE_INFINITY,
      ...options,
    }
  }

  /** Replaces the assignment: each partition fetched from its offset. */
  assign(partitions: readonly TopicPartitionOffset[]): void {
    this.#positions.clear()
    for (const p of partitions) this.#positions.set(key(p.topic, p.partition), p)
    this.#client.track(new Set(partitions.map((p) => p.topic)))
  }

  /** Moves one partition's position (after a caller consumed only part of a fetch). */
  seek(topic: string, partition: number, offset: bigint): void {
    this.#positions.set(key(topic, partition), { topic, partition, offset })
  }

  positions(): TopicPartitionOffset[] {
    return [...this.#positions.values()]
  }

  /**
   * One round: a Fetch to every leader of assigned partitions, in parallel; positions move past
   * the batches returned. Partitions whose leader moved are re-resolved for the next round.
   */
  async fetch(): Promise<FetchedPartition[]> {
    if (this.#positions.size === 0) return []
    const byLeader = new Map<number, TopicPartitionOffset[]>()
    let refresh = false
    for (const p of this.#positions.values()) {
      let leader: number
      try {
        leader = await this.#client.leaderOf(p.topic, p.partition)
      } catch (e) {
        if (!isRetriable(e)) throw e
        refresh = true
        this.#lastError = e
        continue
      }
      byLeader.set(leader, [...(byLeader.get(leader) ?? []), p])
    }
    const results: FetchedPartition[] = []
    const failures: unknown[] = []
    await Promise.all(
      [...byLeader].map(([leader, list]) =>
        this.#fetchFrom(leader, list).then(
          (r) => {
            results.push(...r.fetched)
            if (r.error !== null) {
              refresh = true
              this.#lastError = r.error
            }
          },
          (e: unknown) => {
            if (isRetriable(e)) {
              refresh = true
              this.#lastError = e
            } else failures.push(e)
          },
        ),
      ),
    )
    if (failures.length > 0) throw failures[0]
    if (!refresh) this.#stalledSince = null
    else {
      const now = this.#client.clock.monotonicMs()
      this.#stalledSince ??= now
      if (now - this.#stalledSince > this.#o.stallTimeoutMs) throw this.#lastError
      await this.#client.sleep(100)
      await this.#client.refresh().catch(() => {})
    }
    return results
  }

  async #fetchFrom(
    leader: number,
    list: readonly TopicPartitionOffset[],
  ): Promise<{ fetched: FetchedPartition[]; error: KafkaError | null }> {
    const topics = new Map<string, TopicPartitionOffset[]>()
    for (const p of list) topics.set(p.topic, [...(topics.get(p.topic) ?? []), p])
    const { response } = await this.#client.request(
      apis.Fetch,
      {
        replicaId: CONSUMER_REPLICA_ID,
        maxWaitMs: this.#o.maxWaitMs,
        minBytes: this.#o.minBytes,
        maxBytes: this.#o.maxBytes,
        isolationLevel: 0,
        sessionId: 0,
        sessionEpoch: -1,
        topics: [...topics].map(([topic, ps]) => ({
          topic: TopicName(topic),
          partitions: ps.map((p) => ({
            partition: p.partition,
            currentLeaderEpoch: -1,
            fetchOffset: p.offset,
            lastFetchedEpoch: -1,
            logStartOffset: -1n,
            partitionMaxBytes: this.#o.partitionMaxBytes,
          })),
        })),
        forgottenTopicsData: [],
        rackId: '',
      },
      { to: leader, maxVersion: 12, timeoutMs: this.#o.maxWaitMs + 30_000 },
    )
    if (response.errorCode !== ErrorCode.None) throw new KafkaError(response.errorCode)
    const fetched: FetchedPartition[] = []
    let error: KafkaError | null = null
    const resets: Array<{ topic: string; partition: number; timestamp: bigint }> = []
    for (const t of response.responses) {
      for (const p of t.partitions) {
        const k = key(t.topic, p.partitionIndex)
        const position = this.#positions.get(k)
        if (position === undefined) continue
        if (p.errorCode === ErrorCode.OffsetOutOfRange) {
          if (this.#o.resetPolicy === 'error')
            throw new KafkaError(
              p.errorCode,
              `offset ${position.offset} is out of range for ${t.topic}-${p.partitionIndex} (log start ${p.logStartOffset}, end ${p.highWatermark})`,
            )
          resets.push({
            topic: t.topic,
            partition: p.partitionIndex,
            timestamp: this.#o.resetPolicy === 'earliest' ? EARLIEST : LATEST,
          })
          continue
        }
        if (p.errorCode !== ErrorCode.None) {
          const e = new KafkaError(p.errorCode, `${t.topic}-${p.partitionIndex}`)
          if (!isRetriable(e)) throw e
          error = e
          continue
        }
        const records = p.records ?? Buffer.alloc(0)
        const next = nextOffset(records, position.offset)
        this.#positions.set(k, { ...position, offset: next })
        fetched.push({
          topic: t.topic,
          partition: p.partitionIndex,
          fetchOffset: position.offset,
          records,
          highWatermark: p.highWatermark,
          logStartOffset: p.logStartOffset,
        })
      }
    }
    if (resets.length > 0) {
      for (const r of await listOffsets(this.#client, resets))
        this.#positions.set(key(r.topic, r.partition), r)
    }
    return { fetched, error }
  }
}

/** The offset after the last complete batch in `records` (a trailing partial batch is ignored). */
export function nextOffset(records: Buffer, from: bigint): bigint {
  let next = from
  let at = 0
  while (at + BATCH_HEADER_BYTES <= records.length) {
    const size = batchSizeAt(records, at)
    if (size < LOG_OVERHEAD || at + size > records.length) break
    const last = lastOffsetOf(readBatchHeader(records, at)) + 1n
    if (last > next) next = last
    at += size
  }
  return next
}

/** Counts the data records at or after `from` in complete batches, from their headers alone. */
export function countRecords(records: Buffer, from: bigint): number {
  let count = 0
  let at = 0
  while (at + BATCH_HEADER_BYTES <= records.length) {
    const size = batchSizeAt(records, at)
    if (size < LOG_OVERHEAD || at + size > records.length) break
    const h = readBatchHeader(records, at)
    if (!isControl(h.attributes)) {
      const last = lastOffsetOf(h)
      if (last >= from) count += h.baseOffset >= from ? h.recordCount : Number(last - from + 1n)
    }
    at += size
  }
  return count
}

/** The data records at or after `from` in complete batches, decoded (control batches skipped). */
export function* decodeRecords(records: Buffer, from: bigint): Generator<KafkaRecord> {
  let at = 0
  while (at + BATCH_HEADER_BYTES <= records.length) {
    const size = batchSizeAt(records, at)
    if (size < LOG_OVERHEAD || at + size > records.length) break
    const h = readBatchHeader(records, at)
    if (!isControl(h.attributes) && lastOffsetOf(h) >= from) {
      const batch = decodeBatch(records, at, { decompressedBytesMax: DECOMPRESSED_BYTES_MAX_DEFAULT })
      for (const r of batch.records) if (r.offset >= from) yield r
    }
    at += size
  }
}

function key(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`
}

/** Reads partitions back whole, for tests that check what was acknowledged against what is there. */
import assert from 'node:assert/strict'
import type { KafkaConnection } from '../../src/client/index.ts'
import type { BrokerId, TopicName } from '../../src/model/index.ts'
import { apis, decodeBatch } from '../../src/protocol/index.ts'

/**
 * Every record value of partitions 0..`partitions`-1 of each topic, from offset 0 to the high
 * watermark, by `topic-partition`, through Fetch v12 requests of every partition not read to its
 * end yet; a fetch error fails the test.
 */
export async function fetchAll(
  c: KafkaConnection,
  topics: ReadonlyArray<{ name: TopicName; partitions: number }>,
): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>()
  const next = new Map<string, bigint>()
  const ends = new Map<string, bigint>()
  for (;;) {
    const wanted = topics
      .map((t) => ({
        topic: t.name,
        partitions: Array.from({ length: t.partitions }, (_, p) => p)
          .filter((p) => {
            const key = `${t.name}-${p}`
            const end = ends.get(key)
            return end === undefined || (next.get(key) ?? 0n) < end
          })
          .map((p) => ({
            partition: p,
            currentLeaderEpoch: -1,
            fetchOffset: next.get(`${t.name}-${p}`) ?? 0n,
            lastFetchedEpoch: -1,
            logStartOffset: -1n,
            partitionMaxBytes: 1 << 16,
          })),
      }))
      .filter((t) => t.partitions.length > 0)
    if (wanted.length === 0) return out
    const res = await c.request(apis.Fetch, 12, {
      replicaId: -1 as BrokerId,
      maxWaitMs: 0,
      minBytes: 0,
      maxBytes: 1 << 26,
      isolationLevel: 0,
      sessionId: 0,
      sessionEpoch: -1,
      topics: wanted,
      forgottenTopicsData: [],
      rackId: '',
    })
    for (const t of res.responses)
      for (const p of t.partitions) {
        const key = `${t.topic}-${p.partitionIndex}`
        assert.equal(p.errorCode, 0, `fetch ${key}`)
        ends.set(key, p.highWatermark)
        const records = p.records ?? Buffer.alloc(0)
        for (let at = 0; at < records.length; ) {
          const b = decodeBatch(records, at)
          for (const r of b.records) out.set(key, [...(out.get(key) ?? []), r.value?.toString() ?? ''])
          next.set(key, b.header.baseOffset + BigInt(b.header.lastOffsetDelta) + 1n)
          at += 12 + b.header.batchLength
        }
      }
  }
}

// @platformatic/kafka against Weir, for test/compat/platformatic.test.ts: the commands of the
// client matrix (test/compat/client-matrix.ts) run in the test's own process, answering the same
// shapes as the other clients' drivers. Buffers throughout (no serializers): keys, values and
// headers are compared byte for byte. Platformatic's consumer always joins a group; "read" (the
// group-less read of the other drivers) uses a fresh group that never commits.
import { randomUUID } from 'node:crypto'
import {
  Admin,
  ConfigResourceTypes,
  Consumer,
  IncrementalAlterConfigOperationTypes,
  type Message,
  Producer,
} from '@platformatic/kafka'

const CODECS = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const
const PER_CODEC = 30
const BASE_TS = 1_600_000_000_000n

type ByPartition = Record<string, number>

function key(codec: string, i: number): Buffer {
  return Buffer.from(`k-${codec}-${i}`)
}

function value(codec: string, i: number): Buffer {
  return Buffer.concat([
    Buffer.from(`${codec}-${i}:${'weir-compat-'.repeat(8)}`),
    Buffer.from([0, 0xff, i & 0xff]),
  ])
}

function headers(codec: string, i: number): Map<Buffer, Buffer> {
  return new Map([
    [Buffer.from('codec'), Buffer.from(codec)],
    [Buffer.from('index'), Buffer.from(String(i))],
    [Buffer.from('bin'), Buffer.from([0, 0xff, i & 0xff])],
  ])
}

function recordJson(m: Message) {
  return {
    partition: m.partition,
    offset: Number(m.offset),
    key: m.key === undefined || m.key === null ? null : Buffer.from(m.key).toString('hex'),
    value: m.value === undefined || m.value === null ? null : Buffer.from(m.value).toString('hex'),
    headers: m.headerEntries.map(([k, v]) => [
      Buffer.from(k).toString(),
      v === null ? null : Buffer.from(v).toString('hex'),
    ]),
    timestamp: Number(m.timestamp),
  }
}

/** The Kafka error name inside a platformatic error (a ProtocolError's apiId, maybe nested). */
function errorName(e: unknown): string {
  const stack: unknown[] = [e]
  while (stack.length > 0) {
    const x = stack.pop() as { apiId?: string; errors?: unknown[]; cause?: unknown } | undefined
    if (x === undefined || x === null) continue
    if (typeof x.apiId === 'string') return x.apiId
    if (Array.isArray(x.errors)) stack.push(...x.errors)
    if (x.cause !== undefined) stack.push(x.cause)
  }
  return String((e as Error).message)
}

/** Retries a call on Kafka's retriable coordinator errors, as an application does. */
async function retrying<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await call()
    } catch (e) {
      const name = errorName(e)
      const retriable = [
        'COORDINATOR_NOT_AVAILABLE',
        'COORDINATOR_LOAD_IN_PROGRESS',
        'NOT_COORDINATOR',
      ].includes(name)
      if (!retriable || attempt === 50) throw e
      await new Promise((r) => setTimeout(r, 100))
    }
  }
}

export function platformaticDriver(bootstrap: () => string) {
  const base = () => ({ bootstrapBrokers: bootstrap().split(','), retries: 5, clientId: 'weir-platformatic' })
  const withAdmin = async <T>(fn: (admin: Admin) => Promise<T>): Promise<T> => {
    const admin = new Admin(base())
    try {
      return await fn(admin)
    } finally {
      await admin.close()
    }
  }

  const partitionsOf = async (admin: Admin, topic: string) =>
    (await admin.metadata({ topics: [topic], forceUpdate: true })).topics.get(topic)!.partitions

  const listOffsets = async (admin: Admin, topic: string, timestamp: bigint) => {
    const count = (await partitionsOf(admin, topic)).length
    const [t] = await admin.listOffsets({
      topics: [
        {
          name: topic,
          partitions: Array.from({ length: count }, (_, partitionIndex) => ({ partitionIndex, timestamp })),
        },
      ],
    })
    return t!.partitions
  }

  const ends = async (admin: Admin, topic: string): Promise<ByPartition> =>
    Object.fromEntries(
      (await listOffsets(admin, topic, -1n)).map((p) => [p.partitionIndex, Number(p.offset)]),
    )

  const committedOf = async (admin: Admin, group: string, topic: string): Promise<ByPartition> => {
    const [g] = await retrying(() => admin.listConsumerGroupOffsets({ groups: [group] }))
    const t = g?.topics.find((x) => x.name === topic)
    return Object.fromEntries((t?.partitions ?? []).map((p) => [p.partitionIndex, Number(p.committedOffset)]))
  }

  /** Reads `topic` in `group` until every partition's next offset reached its end, then stops. */
  async function readToEnd(
    topic: string,
    group: string,
    start: ByPartition,
    end: ByPartition,
    commit: boolean,
  ) {
    const at = { ...start }
    const done = () => Object.entries(end).every(([p, e]) => (at[p] ?? 0) >= e)
    const records: ReturnType<typeof recordJson>[] = []
    if (done()) return records
    const consumer = new Consumer({
      ...base(),
      groupId: group,
      heartbeatInterval: 500,
      sessionTimeout: 10_000,
    })
    try {
      const stream = await consumer.consume({
        topics: [topic],
        mode: 'committed',
        fallbackMode: 'earliest',
        autocommit: false,
        maxWaitTime: 200,
      })
      const last = new Map<number, Message>()
      const deadline = setTimeout(
        () => stream.destroy(new Error(`not at the end offsets within 60 s: ${JSON.stringify(at)}`)),
        60_000,
      )
      try {
        for await (const m of stream as AsyncIterable<Message>) {
          records.push(recordJson(m))
          at[m.partition] = Number(m.offset) + 1
          last.set(m.partition, m)
          if (done()) break
        }
      } finally {
        clearTimeout(deadline)
      }
      if (commit) for (const m of last.values()) await m.commit()
      await stream.close()
    } finally {
      await consumer.close(true)
    }
    return records
  }

  const commands: Record<string, (...args: string[]) => Promise<unknown>> = {
    admin: (prefix) =>
      withAdmin(async (admin) => {
        const a = `${prefix}-a`
        const b = `${prefix}-b`
        await admin.createTopics({ topics: [a], partitions: 3 })
        await admin.createTopics({
          topics: [b],
          partitions: 1,
          configs: [{ name: 'cleanup.policy', value: 'compact' }],
        })
        const again = await admin.createTopics({ topics: [a], partitions: 3 }).then(
          () => 'none',
          (e: unknown) => errorName(e),
        )
        const listed = (await admin.listTopics()).sort()
        const partitions = (await partitionsOf(admin, a)).map((p, i) => [
          i,
          p.leader,
          p.replicas.length,
          p.isr.length,
        ])
        await admin.incrementalAlterConfigs({
          resources: [
            {
              resourceType: ConfigResourceTypes.TOPIC,
              resourceName: a,
              configs: [
                {
                  name: 'retention.ms',
                  configOperation: IncrementalAlterConfigOperationTypes.SET,
                  value: '86400000',
                },
              ],
            },
          ],
        })
        const configs = await admin.describeConfigs({
          resources: [
            { resourceType: ConfigResourceTypes.TOPIC, resourceName: a, configurationKeys: ['retention.ms'] },
            {
              resourceType: ConfigResourceTypes.TOPIC,
              resourceName: b,
              configurationKeys: ['cleanup.policy'],
            },
          ],
        })
        const configValue = (topic: string, name: string) =>
          configs.find((c) => c.resourceName === topic)?.configs.find((c) => c.name === name)?.value
        await admin.createPartitions({ topics: [{ name: a, count: 5 }] })
        let partitionsAfter = 0
        for (
          const deadline = Date.now() + 10_000;
          Date.now() < deadline;
          await new Promise((r) => setTimeout(r, 100))
        ) {
          partitionsAfter = (await partitionsOf(admin, a)).length
          if (partitionsAfter === 5) break
        }
        await admin.deleteTopics({ topics: [b] })
        let listedAfterDelete = (await admin.listTopics()).sort()
        for (const deadline = Date.now() + 10_000; listedAfterDelete.includes(b) && Date.now() < deadline; ) {
          await new Promise((r) => setTimeout(r, 100))
          listedAfterDelete = (await admin.listTopics()).sort()
        }
        // Without retries: the client retries an unknown topic (5 times a second apart here).
        const once = new Admin({ ...base(), retries: 0 })
        const describeDeleted = await once.metadata({ topics: [b], forceUpdate: true }).then(
          () => 'none',
          (e: unknown) => errorName(e),
        )
        await once.close()
        return {
          again,
          listed,
          partitions,
          retention: configValue(a, 'retention.ms'),
          cleanup: configValue(b, 'cleanup.policy'),
          partitionsAfter,
          listedAfterDelete,
          describeDeleted,
        }
      }),

    async produce(topic, partitions) {
      await withAdmin((admin) => admin.createTopics({ topics: [topic], partitions: Number(partitions) }))
      // The defaults (acks=-1, murmur2 of the key) but the codec, one send (a batch a partition) per codec.
      const producer = new Producer(base())
      try {
        for (const [c, codec] of CODECS.entries()) {
          await producer.send({
            compression: codec,
            messages: Array.from({ length: PER_CODEC }, (_, i) => ({
              topic,
              key: key(codec, i),
              value: value(codec, i),
              headers: headers(codec, i),
              timestamp: BASE_TS + BigInt(c * 1000 + i),
            })),
          })
        }
      } finally {
        await producer.close()
      }
      // The acks give a base offset per partition, not each record's: the reader checks the order.
      return {
        sent: CODECS.flatMap((codec, c) =>
          Array.from({ length: PER_CODEC }, (_, i) => ({
            key: key(codec, i).toString('hex'),
            partition: -1,
            offset: -1,
            timestamp: Number(BASE_TS) + c * 1000 + i,
          })),
        ),
      }
    },

    async idempotent(topic, count) {
      await withAdmin((admin) => admin.createTopics({ topics: [topic], partitions: 1 }))
      const producer = new Producer({ ...base(), idempotent: true, acks: -1 })
      const n = Number(count)
      const perSend = 10
      try {
        // One send of 10 records after another: concurrent send() calls are not ordered with each
        // other by the client (their batches get sequence numbers in whatever order they go out).
        const results = []
        for (let s = 0; s < n / perSend; s++) {
          results.push(
            await producer.send({
              messages: Array.from({ length: perSend }, (_, j) => ({
                topic,
                partition: 0,
                key: Buffer.from(`i${s * perSend + j}`),
                value: Buffer.from(`v${s * perSend + j}`),
              })),
            }),
          )
        }
        return {
          offsets: results.flatMap((r) =>
            Array.from({ length: perSend }, (_, j) => Number(r.offsets?.[0]?.offset ?? -1n) + j),
          ),
        }
      } finally {
        await producer.close()
      }
    },

    async more(topic, count) {
      const producer = new Producer(base())
      try {
        await producer.send({
          messages: Array.from({ length: Number(count) }, (_, i) => ({
            topic,
            key: Buffer.from(`more-${i}`),
            value: Buffer.from(`more-${i}`),
          })),
        })
      } finally {
        await producer.close()
      }
      return { sent: [] }
    },

    async consume(topic, group) {
      return withAdmin(async (admin) => {
        const end = await ends(admin, topic)
        const committed = await committedOf(admin, group!, topic)
        const start = Object.fromEntries(Object.keys(end).map((p) => [p, Math.max(0, committed[p] ?? 0)]))
        const records = await readToEnd(topic!, group!, start, end, true)
        return { records, committed: await committedOf(admin, group!, topic) }
      })
    },

    async read(topic) {
      const end = await withAdmin((admin) => ends(admin, topic!))
      const start = Object.fromEntries(Object.keys(end).map((p) => [p, 0]))
      return { records: await readToEnd(topic!, `weir-read-${randomUUID()}`, start, end, false) }
    },

    async offsets(topic, timestamp) {
      return withAdmin(async (admin) => {
        const at = async (ts: bigint) => await listOffsets(admin, topic!, ts)
        const byPartition = (ps: Awaited<ReturnType<typeof at>>, field: 'offset' | 'timestamp') =>
          Object.fromEntries(ps.map((p) => [p.partitionIndex, Number(p[field])]))
        const byTime = await at(BigInt(timestamp!))
        // The consumer's own lookup (ListOffsets from Consumer.listOffsetsWithTimestamps).
        const consumer = new Consumer({ ...base(), groupId: `weir-offsets-${randomUUID()}` })
        let consumerByTime: ByPartition
        try {
          const found = await consumer.listOffsetsWithTimestamps({
            topics: [topic!],
            timestamp: BigInt(timestamp!),
          })
          consumerByTime = Object.fromEntries(
            [...(found.get(topic!) ?? new Map())].map(([p, o]) => [p, Number(o.offset)]),
          )
        } finally {
          await consumer.close()
        }
        return {
          earliest: byPartition(await at(-2n), 'offset'),
          latest: byPartition(await at(-1n), 'offset'),
          byTime: byPartition(byTime, 'offset'),
          byTimeTimestamp: byPartition(byTime, 'timestamp'),
          consumerByTime,
        }
      })
    },

    committed: (topic, group) =>
      withAdmin(async (admin) => {
        const described = await admin.describeGroups({ groups: [group!] })
        return {
          committed: await committedOf(admin, group!, topic!),
          groupState: described.get(group!)?.state,
        }
      }),
  }

  return async (command: string, ...args: string[]): Promise<unknown> => {
    const run = commands[command]
    if (run === undefined) throw new Error(`unknown command ${command}`)
    return await run(...args)
  }
}

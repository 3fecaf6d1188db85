/**
 * Codec benchmark: decode plus re-encode of a Produce request carrying 1 MiB of record batches,
 * and of a Fetch response carrying the same. Prints figures; asserts nothing about time.
 * Run: npm run bench:codec
 */

import type { TopicName } from '../src/model/index.ts'
import { decodeRequest, decodeResponse, encodeRequest, encodeResponse } from '../src/protocol/codec.ts'
import { apis } from '../src/protocol/generated/apis.ts'
import type { ProduceRequestData } from '../src/protocol/generated/index.ts'

const PARTITIONS = 64
const BATCH_BYTES = 16 * 1024
const SECONDS = Number(process.env.BENCH_SECONDS ?? 2)

function produceRequest(): ProduceRequestData.ProduceRequestIn {
  const batch = Buffer.alloc(BATCH_BYTES, 7)
  return {
    acks: -1,
    timeoutMs: 30000,
    topicData: [
      {
        name: 'bench' as TopicName,
        partitionData: Array.from({ length: PARTITIONS }, (_, index) => ({ index, records: batch })),
      },
    ],
  }
}

function measure(label: string, bytesPerOp: number, op: () => void): void {
  for (let i = 0; i < 200; i++) op()
  let ops = 0
  const start = process.hrtime.bigint()
  const deadline = start + BigInt(SECONDS * 1e9)
  let now = start
  while (now < deadline) {
    for (let i = 0; i < 100; i++) op()
    ops += 100
    now = process.hrtime.bigint()
  }
  const seconds = Number(now - start) / 1e9
  const perSecond = ops / seconds
  console.log(
    `${label.padEnd(52)} ${perSecond.toFixed(0).padStart(9)} ops/s ${((perSecond * bytesPerOp) / 1e6).toFixed(0).padStart(8)} MB/s of batches carried (zero-copy) ${(1e6 / perSecond).toFixed(1).padStart(7)} µs/op`,
  )
}

const payload = PARTITIONS * BATCH_BYTES
for (const version of [3, 9, 11]) {
  const frame = Buffer.concat(
    encodeRequest(
      apis.Produce,
      { requestApiVersion: version, correlationId: 1, clientId: 'bench' },
      produceRequest(),
    ),
  ).subarray(4)
  measure(`Produce v${version} request decode (1 MiB in ${PARTITIONS} batches)`, payload, () => {
    decodeRequest(frame)
  })
  measure(`Produce v${version} request decode + re-encode`, payload, () => {
    const d = decodeRequest(frame)
    if (d.kind !== 'ok') throw new Error('decode failed')
    encodeRequest(
      apis.Produce,
      { requestApiVersion: version, correlationId: 1, clientId: 'bench' },
      d.body as ProduceRequestData.ProduceRequest,
    )
  })
}

const fetchBody = {
  responses: [
    {
      topic: 'bench' as TopicName,
      partitions: Array.from({ length: PARTITIONS }, (_, partitionIndex) => ({
        partitionIndex,
        highWatermark: 1000n,
        records: Buffer.alloc(BATCH_BYTES, 7),
      })),
    },
  ],
}
for (const version of [4, 12]) {
  measure(`Fetch v${version} response encode (1 MiB, batches referenced)`, payload, () => {
    encodeResponse(apis.Fetch, version, 1, fetchBody)
  })
  const frame = Buffer.concat(encodeResponse(apis.Fetch, version, 1, fetchBody)).subarray(4)
  measure(`Fetch v${version} response decode`, payload, () => {
    decodeResponse(apis.Fetch, version, frame)
  })
}

/**
 * Kafka's own kafka-dump-log (`DumpLogSegments`, from the tools/kafka jars), in one run, on two files
 * Weir's transaction building blocks wrote on the real file system: a `.txnindex` from
 * `TransactionIndex` (every entry read back with the values appended, after a truncation and past
 * a torn tail Weir's open then cut), and a `__transaction_state` segment of records from
 * `transaction-records.ts`, which its `--transaction-log-decoder` decodes field by field (a v0 and a
 * v1 value, and a tombstone).
 */
// compat-cluster: skip it reads files Weir's code wrote; no broker is involved
import assert from 'node:assert/strict'
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, test } from 'node:test'
import {
  encodeTransactionLogKey,
  encodeTransactionLogValue,
  type PersistedTransaction,
} from '../../src/coordinator/index.ts'
import { NodeDisk } from '../../src/io/index.ts'
import { encodeBatch } from '../../src/protocol/index.ts'
import { type AbortedTxn, TransactionIndex } from '../../src/storage/index.ts'
import { kafkaTool } from '../support/kafka-tools.ts'
import { tempDir } from '../support/weir-process.ts'

const dir = tempDir('weir-dump-txnindex-')
after(() => dir.remove())

const ongoing: PersistedTransaction = {
  producerId: 1000n,
  previousProducerId: 999n,
  nextProducerId: -1n,
  producerEpoch: 3,
  txnTimeoutMs: 60_000,
  state: 'Ongoing',
  partitions: [
    { topic: 'a', partition: 0 },
    { topic: 'a', partition: 2 },
    { topic: 'b', partition: 1 },
  ],
  txnStartTimestampMs: 1_700_000_000_000,
  txnLastUpdateTimestampMs: 1_700_000_000_500,
  clientTransactionVersion: 2,
}

test('kafka-dump-log reads a .txnindex and __transaction_state records Weir wrote', async () => {
  const stateDir = join(dir.path, '__transaction_state-0')
  mkdirSync(stateDir)
  const segment = join(stateDir, '00000000000000000000.log')
  const timestamp = 1_700_000_000_500n
  writeFileSync(
    segment,
    encodeBatch({
      records: [
        { key: encodeTransactionLogKey('tx-0'), value: encodeTransactionLogValue(ongoing, 0), timestamp },
        { key: encodeTransactionLogKey('tx-1'), value: encodeTransactionLogValue(ongoing, 2), timestamp },
        { key: encodeTransactionLogKey('tx-2'), value: encodeTransactionLogValue(null, 2), timestamp },
      ],
    }),
  )
  const path = join(dir.path, '00000000000000000100.txnindex')
  const disk = new NodeDisk()
  const index = await TransactionIndex.open(disk, path, 100n)
  const entries: AbortedTxn[] = [
    { producerId: 4000n, firstOffset: 100n, lastOffset: 112n, lastStableOffset: 100n },
    { producerId: 4001n, firstOffset: 105n, lastOffset: 130n, lastStableOffset: 113n },
    { producerId: 4002n, firstOffset: 131n, lastOffset: 150n, lastStableOffset: 131n },
    { producerId: 4003n, firstOffset: 151n, lastOffset: 160n, lastStableOffset: 151n },
  ]
  for (const e of entries) await index.append(e)
  await index.truncateTo(155n)
  await index.flush()
  await index.close()
  // A torn entry after the last whole one, as a crash mid-append leaves it; opening cuts it.
  appendFileSync(path, Buffer.alloc(17, 7))
  await (await TransactionIndex.open(disk, path, 100n)).close()

  const out = await kafkaTool(
    'org.apache.kafka.tools.DumpLogSegments',
    '--files',
    `${path},${segment}`,
    '--transaction-log-decoder',
  )
  const lines = out.split('\n').filter((l) => l.startsWith('version:'))
  assert.deepEqual(
    lines,
    entries
      .slice(0, 3)
      .map(
        (e) =>
          `version: 0 producerId: ${e.producerId} firstOffset: ${e.firstOffset} lastOffset: ${e.lastOffset} lastStableOffset: ${e.lastStableOffset}`,
      ),
    out,
  )
  const partitions =
    '"transactionPartitions":[{"topic":"a","partitionIds":[0,2]},{"topic":"b","partitionIds":[1]}]'
  const common = `"producerEpoch":3,"transactionTimeoutMs":60000,"transactionStatus":"Ongoing",${partitions},"transactionLastUpdateTimestampMs":1700000000500,"transactionStartTimestampMs":1700000000000`
  const decoded = out
    .split('\n')
    .filter((l) => l.includes(' key: '))
    .map((l) => l.slice(l.indexOf(' key: ') + 1))
  assert.deepEqual(
    decoded,
    [
      `key: {"type":"0","data":{"transactionalId":"tx-0"}} payload: {"version":"0","data":{"producerId":1000,${common}}}`,
      `key: {"type":"0","data":{"transactionalId":"tx-1"}} payload: {"version":"1","data":{"producerId":1000,"previousProducerId":999,${common},"clientTransactionVersion":2}}`,
      `key: {"type":"0","data":{"transactionalId":"tx-2"}} payload: <DELETE>`,
    ],
    out,
  )
})

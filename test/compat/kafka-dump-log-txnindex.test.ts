/**
 * Kafka's own kafka-dump-log (`DumpLogSegments`, from the tools/kafka jars) on a `.txnindex` that
 * Weir's `TransactionIndex` wrote on the real file system: the tool reads every entry back, with
 * the values Weir appended, after a truncation and past a torn tail Weir's open then cut.
 */
// compat-cluster: skip it reads one file Weir's storage wrote; no broker is involved
import assert from 'node:assert/strict'
import { appendFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { NodeDisk } from '../../src/io/index.ts'
import { type AbortedTxn, TransactionIndex } from '../../src/storage/index.ts'
import { kafkaTool } from '../support/kafka-tools.ts'
import { tempDir } from '../support/weir-process.ts'

const dir = tempDir('weir-dump-txnindex-')
after(() => dir.remove())

test('kafka-dump-log reads the aborted transactions of a .txnindex Weir wrote', async () => {
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

  const out = await kafkaTool('org.apache.kafka.tools.DumpLogSegments', '--files', path)
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
})

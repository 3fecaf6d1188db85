import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  config,
  decodeAll,
  LOG_DIR_ROOT,
  logDirSetup,
  readAll,
  valuesBatch,
} from '../../test/storage/fixtures.ts'
import { LogDirFile, LogManager, parsePartitionDir } from './log-manager.ts'
import { MetaPropertiesError, parseMetaProperties } from './meta-properties.ts'
import { formatOffsetCheckpoint, parseOffsetCheckpoint } from './offset-checkpoint-file.ts'

const ROOT = LOG_DIR_ROOT
const setup = logDirSetup

describe('checkpoint files and meta.properties', () => {
  it('round-trips Kafka checkpoint text', () => {
    const text = formatOffsetCheckpoint([
      { topic: 'b', partition: 1, offset: 7n },
      { topic: 'a-b.c', partition: 10, offset: 0n },
    ])
    assert.equal(text, '0\n2\na-b.c 10 0\nb 1 7\n')
    const parsed = parseOffsetCheckpoint(text)
    assert.equal(parsed.get('a-b.c-10')?.offset, 0n)
    assert.throws(() => parseOffsetCheckpoint('0\n3\na 1 2\n'))
    assert.throws(() => parseOffsetCheckpoint('1\n0\n'))
  })

  it('parses Kafka meta.properties', () => {
    const meta = parseMetaProperties(
      '#\n#Thu Jan 01 00:00:00 UTC 2025\nnode.id=3\ndirectory.id=abc\nversion=1\ncluster.id=xyz\n',
    )
    assert.deepEqual(meta, { version: 1, clusterId: 'xyz', nodeId: 3, directoryId: 'abc' })
    assert.throws(() => parseMetaProperties('version=1\nnode.id=1\n'), MetaPropertiesError)
  })

  it('parses partition directory names, skipping deleted and future ones', () => {
    assert.deepEqual(parsePartitionDir('my-topic-12'), { topic: 'my-topic', partition: 12 })
    assert.equal(parsePartitionDir('my-topic-1.0123456789abcdef0123456789abcdef-delete'), null)
    assert.equal(parsePartitionDir('meta.properties'), null)
  })
})

describe('LogManager', () => {
  it("answers reads of its logs' last 8 MiB from the write tail (BROKER_TAIL_BYTES_MAX)", async () => {
    const { options } = await setup()
    const m = await LogManager.open(ROOT, options)
    const log = await m.getOrCreateLog('t', 0)
    const value = 'v'.repeat(64 * 1024)
    for (let i = 0; i < 128; i++) await log.append(valuesBatch(1, value)) // 8 MiB, 128 batches
    const { hits, misses } = m.tailBudget
    // A follower 8 MiB behind: every read of the last 128 batches comes from memory.
    for (let offset = 0n; offset < log.logEndOffset; ) {
      const r = await log.read(offset, 1024 * 1024)
      assert.equal(r.errorCode, 0)
      assert.ok('records' in r && r.records.length > 0)
      offset += BigInt(decodeAll(r.records).length)
    }
    assert.equal(m.tailBudget.misses, misses)
    assert.ok(m.tailBudget.hits >= hits + 8)
    await m.close()
  })

  it('lays out a log dir as Kafka does and shuts down cleanly', async () => {
    const { disk, options } = await setup({ directoryId: 'J8aAPcfLQt2UqdE-tp1XnA' })
    const m = await LogManager.open(ROOT, options)
    const a = await m.getOrCreateLog('orders', 0)
    const b = await m.getOrCreateLog('orders', 1)
    await a.append(valuesBatch(3, 'a'))
    await b.append(valuesBatch(2, 'b'))
    await m.close()
    assert.deepEqual(await disk.list(ROOT), [
      LogDirFile.cleanShutdown,
      LogDirFile.cleanerOffsetCheckpoint,
      LogDirFile.logStartOffsetCheckpoint,
      'meta.properties',
      'orders-0',
      'orders-1',
      LogDirFile.recoveryPointCheckpoint,
    ])
    const meta = parseMetaProperties((await disk.readFile(`${ROOT}/meta.properties`)).toString())
    assert.deepEqual(meta, {
      version: 1,
      clusterId: options.clusterId,
      nodeId: 1,
      directoryId: 'J8aAPcfLQt2UqdE-tp1XnA',
    })
    assert.equal(
      (await disk.readFile(`${ROOT}/${LogDirFile.recoveryPointCheckpoint}`)).toString(),
      '0\n2\norders 0 3\norders 1 2\n',
    )
    // Reopen: clean, the marker is consumed, data intact.
    const again = await LogManager.open(ROOT, options)
    assert.equal(again.hadCleanShutdown, true)
    assert.equal(await disk.exists(`${ROOT}/${LogDirFile.cleanShutdown}`), false)
    assert.deepEqual(
      (await readAll(again.getLog('orders', 0)!)).map((r) => r.value),
      ['a0', 'a1', 'a2'],
    )
    await again.close()
  })

  it('refuses a directory of another cluster or node', async () => {
    const { options } = await setup()
    const m = await LogManager.open(ROOT, options)
    await m.close()
    await assert.rejects(LogManager.open(ROOT, { ...options, clusterId: 'other' }), MetaPropertiesError)
    await assert.rejects(LogManager.open(ROOT, { ...options, nodeId: 2 }), MetaPropertiesError)
    const { options: fresh } = await setup({ formatIfMissing: false })
    await assert.rejects(LogManager.open(ROOT, fresh), /format/)
  })

  it('leaves the KRaft metadata log (__cluster_metadata-0) sharing the directory to the quorum', async () => {
    const { disk, options } = await setup()
    await disk.mkdir(`${ROOT}/__cluster_metadata-0`)
    await disk.syncDir(ROOT)
    const quorumLog = `${ROOT}/__cluster_metadata-0/00000000000000000000.log`
    const f = await disk.open(quorumLog, { create: true })
    await f.append([Buffer.from('not a partition log of ours')])
    await f.sync()
    await f.close()
    const m = await LogManager.open(ROOT, options)
    assert.deepEqual(m.logs(), [])
    await m.close()
    assert.deepEqual(await disk.list(`${ROOT}/__cluster_metadata-0`), ['00000000000000000000.log'])
    assert.equal((await disk.readFile(quorumLog)).toString(), 'not a partition log of ours')
  })

  it('makes a log directory it creates durable (found by the cluster simulation, seed 4)', async () => {
    const { disk, options } = await setup()
    const m = await LogManager.open('/new-logs', options)
    const log = await m.getOrCreateLog('t', 0)
    await log.append(valuesBatch(2, 'x'))
    await log.flush()
    disk.crash()
    const again = await LogManager.open('/new-logs', options)
    assert.deepEqual(
      (await readAll(again.getLog('t', 0)!)).map((r) => r.value),
      ['x0', 'x1'],
    )
    await again.close()
  })

  it('recovers after a crash from the checkpointed recovery point', async () => {
    const { disk, clock, options } = await setup()
    const m = await LogManager.open(ROOT, options)
    const log = await m.getOrCreateLog('t', 0)
    await log.append(valuesBatch(2, 'x'))
    await log.flush()
    await m.checkpointRecoveryPoints()
    await log.append(valuesBatch(2, 'y'))
    await log.flush()
    await log.append(valuesBatch(2, 'lost'))
    disk.crash()
    const warnings: string[] = []
    const again = await LogManager.open(ROOT, { ...options, clock, onWarning: (w) => warnings.push(w) })
    assert.equal(again.hadCleanShutdown, false)
    assert.deepEqual(
      (await readAll(again.getLog('t', 0)!)).map((r) => r.value),
      ['x0', 'x1', 'y0', 'y1'],
    )
    await again.close()
  })

  it('runs retention and the checkpoints on its schedule, and deletes logs', async () => {
    const { disk, clock, options } = await setup({
      config: {
        recoveryPointCheckpointIntervalMs: 1000,
        logStartOffsetCheckpointIntervalMs: 1000,
        flushSchedulerIntervalMs: 500,
        retentionCheckIntervalMs: 2000,
        cleanerEnable: false,
        cleanerDedupeBufferBytes: 1 << 16,
        cleanerIoBufferBytes: 1 << 16,
        cleanerIoBufferLoadFactor: 0.9,
        cleanerBackoffMs: 1000,
      },
      defaultLogConfig: config({
        segmentBytes: 200,
        retentionMs: 10_000,
        flushMs: 100,
        fileDeleteDelayMs: 0,
      }),
    })
    const m = await LogManager.open(ROOT, options)
    m.start()
    const log = await m.getOrCreateLog('r', 0)
    for (let i = 0; i < 6; i++) await log.append(valuesBatch(2, `v${i}-`, clock.nowMs() - 60_000))
    await log.append(valuesBatch(2, 'fresh', clock.nowMs()))
    const settle = () => new Promise((r) => setTimeout(r, 2))
    clock.advance(600)
    await settle()
    assert.equal(log.recoveryPoint, log.logEndOffset, 'flush.ms flushed the log')
    clock.advance(1500)
    await settle()
    await settle()
    assert.ok(log.logStartOffset > 0n, 'retention deleted old segments')
    // Kafka checkpoints a start offset only when it is inside the first segment (DeleteRecords).
    await log.deleteRecordsBefore(log.logStartOffset + 1n)
    clock.advance(1000)
    await settle()
    const lso = parseOffsetCheckpoint(
      (await disk.readFile(`${ROOT}/${LogDirFile.logStartOffsetCheckpoint}`)).toString(),
    )
    assert.equal(lso.get('r-0')?.offset, log.logStartOffset)
    await m.deleteLog('r', 0)
    assert.ok((await disk.list(ROOT)).some((n) => n.startsWith('r-0.') && n.endsWith('-delete')))
    clock.advance(1)
    await settle()
    assert.ok(!(await disk.list(ROOT)).some((n) => n.startsWith('r-0')))
    await m.close()
  })
})

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { ManualClock, SimDisk } from '../io/index.ts'
import { ErrorCode } from '../protocol/index.ts'
import { DEFAULT_LOG_CONFIG, PartitionLog } from '../storage/index.ts'
import { decodeKeyedBatches } from './coordinator-records.ts'
import { LocalOffsetsLog, type OffsetsLog } from './offsets-log.ts'
import {
  COMPLETION_WAIT_MS,
  TransactionCoordinator,
  type TransactionCoordinatorConfig,
  type TxnMarker,
  type TxnMarkerChannel,
  txnPartitionKey,
} from './transaction-coordinator.ts'
import { decodeTransactionLogRecord, type TxnPartition } from './transaction-records.ts'

const START_MS = 1_700_000_000_000
const CONFIG: TransactionCoordinatorConfig = {
  transactionTimeoutMsMax: 900_000,
  abortTimedOutIntervalMs: 10_000,
  removeExpiredIntervalMs: 3_600_000,
  transactionalIdExpirationMs: 604_800_000,
  transactionVersionLevel: 0,
  retryBackoffMs: 100,
}
const P0: TxnPartition = { topic: 'orders', partition: 0 }
const P1: TxnPartition = { topic: 'orders', partition: 1 }

/**
 * The markers as partition leaders would take them: each attempt recorded, and a partition answers
 * what `answer` says (NONE by default).
 */
class InProcessMarkers implements TxnMarkerChannel {
  readonly attempts: TxnMarker[] = []
  /** Per partition key, the markers written there. */
  readonly written = new Map<string, TxnMarker[]>()
  answer: (p: TxnPartition) => ErrorCode = () => ErrorCode.None

  async writeMarkers(marker: TxnMarker): Promise<ReadonlyMap<string, ErrorCode>> {
    this.attempts.push(marker)
    const out = new Map<string, ErrorCode>()
    for (const p of marker.partitions) {
      const errorCode = this.answer(p)
      if (errorCode === ErrorCode.None) {
        const list = this.written.get(txnPartitionKey(p)) ?? []
        list.push(marker)
        this.written.set(txnPartitionKey(p), list)
      }
      out.set(txnPartitionKey(p), errorCode)
    }
    return out
  }
}

async function openLog(disk: SimDisk, clock: ManualClock): Promise<PartitionLog> {
  if (!(await disk.exists('/data'))) {
    await disk.mkdir('/data')
    await disk.syncDir('/')
  }
  return PartitionLog.open('/data/__transaction_state-0', DEFAULT_LOG_CONFIG, { disk, clock })
}

function coordinator(
  log: OffsetsLog,
  clock: ManualClock,
  markers: TxnMarkerChannel,
  config: Partial<TransactionCoordinatorConfig> = {},
): TransactionCoordinator {
  let next = 1000n
  return new TransactionCoordinator({
    config: { ...CONFIG, ...config },
    partitionCount: 1,
    log,
    markers,
    clock,
    newProducerId: async () => ({ producerId: next++ }),
  })
}

/** Lets promise chains (disk writes) run; the ManualClock moves only when told. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) {
    for (let j = 0; j < 20; j++) await new Promise<void>((r) => queueMicrotask(r))
    await new Promise<void>((r) => setImmediate(r))
  }
}

async function begin(c: TransactionCoordinator, id: string, timeoutMs = 60_000) {
  const init = await c.initProducerId({
    transactionalId: id,
    transactionTimeoutMs: timeoutMs,
    expected: null,
  })
  assert.equal(init.errorCode, ErrorCode.None)
  const added = await c.addPartitionsToTxn({
    transactionalId: id,
    producerId: init.producerId,
    producerEpoch: init.producerEpoch,
    partitions: [P0, P1],
  })
  assert.equal(added, ErrorCode.None)
  return init
}

describe('TransactionCoordinator', () => {
  test("the next transaction's AddPartitionsToTxn waits for the last one's markers (COMPLETION_WAIT_MS at most), then answers", async () => {
    const disk = new SimDisk()
    const clock = new ManualClock({ nowMs: START_MS })
    const log = await openLog(disk, clock)
    // The markers are held until released.
    let release: (() => void) | null = null
    const markers = new InProcessMarkers()
    const held: TxnMarkerChannel = {
      writeMarkers: async (m) => {
        await new Promise<void>((resolve) => {
          release = resolve
        })
        return markers.writeMarkers(m)
      },
    }
    const c = coordinator(new LocalOffsetsLog(() => log), clock, held)
    await c.onElection(0, 1)
    const init = await begin(c, 't')
    const ids = { transactionalId: 't', producerId: init.producerId, producerEpoch: init.producerEpoch }
    const ended = await c.endTxn({ ...ids, committed: true, clientTransactionVersion: 0 })
    assert.equal(ended.errorCode, ErrorCode.None)
    await settle()
    let answer: ErrorCode | null = null
    void c.addPartitionsToTxn({ ...ids, partitions: [P0] }).then((e) => {
      answer = e
    })
    await settle()
    assert.equal(answer, null, 'waiting while the markers are written')
    ;(release as (() => void) | null)?.()
    await settle()
    assert.equal(answer, ErrorCode.None, 'answered once the completion is written, without a retry')
    assert.equal(c.describeTransactions(['t'])[0]?.state, 'Ongoing')

    // Markers that do not come: CONCURRENT_TRANSACTIONS after the wait, as before.
    const ended2 = await c.endTxn({ ...ids, committed: false, clientTransactionVersion: 0 })
    assert.equal(ended2.errorCode, ErrorCode.None)
    await settle()
    let second: ErrorCode | null = null
    void c.addPartitionsToTxn({ ...ids, partitions: [P1] }).then((e) => {
      second = e
    })
    await settle()
    assert.equal(second, null)
    clock.advance(COMPLETION_WAIT_MS)
    await settle()
    assert.equal(second, ErrorCode.ConcurrentTransactions)
    ;(release as (() => void) | null)?.()
    await settle()
  })

  test('a transaction commits: markers to each partition, then CompleteCommit; a reload keeps it', async () => {
    const disk = new SimDisk()
    const clock = new ManualClock({ nowMs: START_MS })
    const log = await openLog(disk, clock)
    const markers = new InProcessMarkers()
    const c = coordinator(new LocalOffsetsLog(() => log), clock, markers)
    assert.equal(c.statusOf('t'), ErrorCode.NotCoordinator)
    await c.onElection(0, 7)
    const first = await c.initProducerId({
      transactionalId: 't',
      transactionTimeoutMs: 60_000,
      expected: null,
    })
    assert.deepEqual(first, { errorCode: ErrorCode.None, producerId: 1000n, producerEpoch: 0 })
    // A second InitProducerId fences the first producer: same id, the epoch bumped.
    const init = await begin(c, 't')
    assert.deepEqual(init, { errorCode: ErrorCode.None, producerId: 1000n, producerEpoch: 1 })
    const fenced = await c.addPartitionsToTxn({
      transactionalId: 't',
      producerId: 1000n,
      producerEpoch: 0,
      partitions: [P0],
    })
    assert.equal(fenced, ErrorCode.ProducerFenced)
    assert.deepEqual(
      c.verifyPartitionsInTxn({
        transactionalId: 't',
        producerId: 1000n,
        producerEpoch: 1,
        partitions: [P1, { topic: 'orders', partition: 2 }],
      }),
      [ErrorCode.None, ErrorCode.TransactionAbortable],
    )
    assert.deepEqual(c.listTransactions({ states: ['Ongoing', 'Bogus'], producerIds: [], durationMs: -1 }), {
      errorCode: ErrorCode.None,
      unknownStateFilters: ['Bogus'],
      transactions: [{ transactionalId: 't', producerId: 1000n, state: 'Ongoing' }],
    })
    const end = await c.endTxn({
      transactionalId: 't',
      producerId: 1000n,
      producerEpoch: 1,
      committed: true,
      clientTransactionVersion: 0,
    })
    assert.equal(end.errorCode, ErrorCode.None)
    await settle()
    assert.equal(c.metadataOf('t')?.state, 'CompleteCommit')
    for (const p of [P0, P1]) {
      assert.deepEqual(markers.written.get(txnPartitionKey(p)), [
        { producerId: 1000n, producerEpoch: 1, coordinatorEpoch: 7, committed: true, partitions: [P0, P1] },
      ])
    }
    const [described] = c.describeTransactions(['t', 'unknown'])
    assert.equal(described?.state, 'CompleteCommit')
    assert.equal(c.describeTransactions(['unknown'])[0]?.errorCode, ErrorCode.TransactionalIdNotFound)
    // The records of each transition, in order, in __transaction_state.
    const states: string[] = []
    const read = await new LocalOffsetsLog(() => log).read(0, 0n, 1 << 20)
    assert.equal(read.errorCode, ErrorCode.None)
    const bytes = read.errorCode === ErrorCode.None ? read.records : Buffer.alloc(0)
    for (const { record } of decodeKeyedBatches(bytes, decodeTransactionLogRecord).records) {
      if ('kind' in record) continue
      states.push(record.value?.state ?? 'tombstone')
    }
    assert.deepEqual(states, ['Empty', 'Empty', 'Ongoing', 'PrepareCommit', 'CompleteCommit'])
    c.close()
    const reloaded = coordinator(new LocalOffsetsLog(() => log), clock, markers)
    await reloaded.onElection(0, 8)
    const m = reloaded.metadataOf('t')
    assert.equal(m?.state, 'CompleteCommit')
    assert.equal(m?.producerEpoch, 1)
    reloaded.close()
  })

  test('failover: a transaction left in PrepareCommit gets its markers from the next leader', async () => {
    const disk = new SimDisk()
    const clock = new ManualClock({ nowMs: START_MS })
    const log = await openLog(disk, clock)
    const down = new InProcessMarkers()
    down.answer = () => ErrorCode.NotLeaderOrFollower
    const a = coordinator(new LocalOffsetsLog(() => log), clock, down)
    await a.onElection(0, 1)
    const init = await begin(a, 't')
    const end = await a.endTxn({
      transactionalId: 't',
      producerId: init.producerId,
      producerEpoch: init.producerEpoch,
      committed: true,
      clientTransactionVersion: 0,
    })
    // Answered after the prepare record, before any marker is written.
    assert.equal(end.errorCode, ErrorCode.None)
    await settle()
    const tries = down.attempts.length
    clock.advance(CONFIG.retryBackoffMs)
    await settle()
    assert.ok(down.attempts.length > tries, 'the markers are retried after the backoff')
    assert.equal(a.metadataOf('t')?.state, 'PrepareCommit')
    a.onResignation(0)
    const up = new InProcessMarkers()
    const b = coordinator(new LocalOffsetsLog(() => log), clock, up)
    await b.onElection(0, 2)
    await settle()
    assert.equal(b.metadataOf('t')?.state, 'CompleteCommit')
    assert.equal(up.written.get(txnPartitionKey(P0))?.[0]?.coordinatorEpoch, 2)
    a.close()
    b.close()
  })

  test('a partition whose topic is gone is dropped; the others get their markers', async () => {
    const clock = new ManualClock({ nowMs: START_MS })
    const log = await openLog(new SimDisk(), clock)
    const markers = new InProcessMarkers()
    markers.answer = (p) => (p.partition === 1 ? ErrorCode.UnknownTopicOrPartition : ErrorCode.None)
    const c = coordinator(new LocalOffsetsLog(() => log), clock, markers)
    await c.onElection(0, 0)
    const init = await begin(c, 't')
    await c.endTxn({
      transactionalId: 't',
      producerId: init.producerId,
      producerEpoch: init.producerEpoch,
      committed: false,
      clientTransactionVersion: 0,
    })
    await settle()
    assert.equal(c.metadataOf('t')?.state, 'CompleteAbort')
    assert.equal(markers.attempts.length, 1)
    c.close()
  })

  test('a partition answering TRANSACTION_COORDINATOR_FENCED stops the sending: a newer coordinator has it', async () => {
    const clock = new ManualClock({ nowMs: START_MS })
    const log = await openLog(new SimDisk(), clock)
    const markers = new InProcessMarkers()
    markers.answer = () => ErrorCode.TransactionCoordinatorFenced
    const c = coordinator(new LocalOffsetsLog(() => log), clock, markers)
    await c.onElection(0, 0)
    const init = await begin(c, 't')
    await c.endTxn({
      transactionalId: 't',
      producerId: init.producerId,
      producerEpoch: init.producerEpoch,
      committed: true,
      clientTransactionVersion: 0,
    })
    await settle()
    clock.advance(CONFIG.retryBackoffMs * 3)
    await settle()
    assert.equal(markers.attempts.length, 1)
    assert.equal(c.metadataOf('t')?.state, 'PrepareCommit')
    c.close()
  })

  test('a transaction past its timeout is aborted under a fenced epoch', async () => {
    const clock = new ManualClock({ nowMs: START_MS })
    const log = await openLog(new SimDisk(), clock)
    const markers = new InProcessMarkers()
    const c = coordinator(new LocalOffsetsLog(() => log), clock, markers)
    await c.onElection(0, 0)
    const init = await begin(c, 't', 5_000)
    clock.advance(CONFIG.abortTimedOutIntervalMs)
    await settle()
    const m = c.metadataOf('t')
    assert.equal(m?.state, 'CompleteAbort')
    assert.equal(m?.producerEpoch, init.producerEpoch + 1)
    assert.equal(markers.attempts[0]?.committed, false)
    assert.equal(markers.attempts[0]?.producerEpoch, init.producerEpoch + 1)
    const late = await c.endTxn({
      transactionalId: 't',
      producerId: init.producerId,
      producerEpoch: init.producerEpoch,
      committed: true,
      clientTransactionVersion: 0,
    })
    assert.equal(late.errorCode, ErrorCode.ProducerFenced)
    c.close()
  })

  test('an idle transactional id expires: a tombstone, gone after a reload', async () => {
    const clock = new ManualClock({ nowMs: START_MS })
    const log = await openLog(new SimDisk(), clock)
    const markers = new InProcessMarkers()
    const config = { transactionalIdExpirationMs: 60_000, removeExpiredIntervalMs: 30_000 }
    const c = coordinator(new LocalOffsetsLog(() => log), clock, markers, config)
    await c.onElection(0, 0)
    await c.initProducerId({ transactionalId: 'idle', transactionTimeoutMs: 60_000, expected: null })
    clock.advance(30_000)
    await settle()
    assert.notEqual(c.metadataOf('idle'), undefined)
    clock.advance(60_000)
    await settle()
    assert.equal(c.metadataOf('idle'), undefined)
    c.close()
    const reloaded = coordinator(new LocalOffsetsLog(() => log), clock, markers, config)
    await reloaded.onElection(0, 1)
    assert.equal(reloaded.metadataOf('idle'), undefined)
    assert.equal(reloaded.describeTransactions(['idle'])[0]?.errorCode, ErrorCode.TransactionalIdNotFound)
    reloaded.close()
  })

  test('a failed write drops the transition: the client is told, and its retry succeeds', async () => {
    const clock = new ManualClock({ nowMs: START_MS })
    const log = await openLog(new SimDisk(), clock)
    const local = new LocalOffsetsLog(() => log)
    let failing: Exclude<ErrorCode, 0> | null = ErrorCode.NotEnoughReplicas
    const flaky: OffsetsLog = {
      append: (p, batch) =>
        failing === null ? local.append(p, batch) : Promise.resolve({ errorCode: failing }),
      read: (p, o, n) => local.read(p, o, n),
      bounds: (p) => local.bounds(p),
    }
    const c = coordinator(flaky, clock, new InProcessMarkers())
    await c.onElection(0, 0)
    const req = { transactionalId: 't', transactionTimeoutMs: 60_000, expected: null }
    assert.equal((await c.initProducerId(req)).errorCode, ErrorCode.CoordinatorNotAvailable)
    failing = ErrorCode.NotLeaderOrFollower
    assert.equal((await c.initProducerId(req)).errorCode, ErrorCode.NotCoordinator)
    failing = null
    const ok = await c.initProducerId(req)
    assert.equal(ok.errorCode, ErrorCode.None)
    assert.equal(c.metadataOf('t')?.pendingState, null)
    c.close()
  })

  test('a partition not led here answers NOT_COORDINATOR; one loading, COORDINATOR_LOAD_IN_PROGRESS', async () => {
    const clock = new ManualClock({ nowMs: START_MS })
    const log = await openLog(new SimDisk(), clock)
    let readable = false
    const local = new LocalOffsetsLog(() => log)
    const gated: OffsetsLog = {
      append: (p, b) => local.append(p, b),
      read: async (p, o, n) => (readable ? local.read(p, o, n) : { errorCode: ErrorCode.KafkaStorageError }),
      bounds: (p) => local.bounds(p),
    }
    const seed = coordinator(local, clock, new InProcessMarkers())
    await seed.onElection(0, 0)
    await seed.initProducerId({ transactionalId: 't', transactionTimeoutMs: 60_000, expected: null })
    seed.close()
    const c = coordinator(gated, clock, new InProcessMarkers())
    const req = { transactionalId: 't', transactionTimeoutMs: 60_000, expected: null }
    assert.equal((await c.initProducerId(req)).errorCode, ErrorCode.NotCoordinator)
    const loaded = c.onElection(0, 1)
    await settle()
    assert.equal((await c.initProducerId(req)).errorCode, ErrorCode.CoordinatorLoadInProgress)
    readable = true
    clock.advance(CONFIG.retryBackoffMs)
    await loaded
    const again = await c.initProducerId(req)
    assert.deepEqual(again, { errorCode: ErrorCode.None, producerId: 1000n, producerEpoch: 1 })
    c.close()
  })
})

/**
 * KIP-890 on the partition leader, as Kafka's AddPartitionsToTxnManager: a transactional batch
 * whose producer has no open transaction on the partition is first checked with (verifyOnly) or,
 * under transaction.version 2 (Produce v12+), added to the transaction by its coordinator. The
 * requests are AddPartitionsToTxn v4+ from this broker (CLUSTER_ACTION on the coordinator),
 * batched per coordinator node: while one is in flight to a node, the next verifications for it
 * gather into the following request. The coordinator's errors are mapped as Kafka's manager maps
 * them: PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH, TRANSACTION_ABORTABLE INVALID_TXN_STATE
 * for clients that predate it, a top-level CLUSTER_AUTHORIZATION_FAILED or a coordinator that
 * serves no v4 INVALID_TXN_STATE, a lost connection NETWORK_EXCEPTION.
 */
import type { ClientSecurity } from '../client/index.ts'
import {
  partitionForGroup,
  TRANSACTION_STATE_TOPIC_NAME,
  type TxnPartition,
  txnPartitionKey,
} from '../coordinator/index.ts'
import type { Clock, Transport } from '../io/index.ts'
import { type MetadataImage, NO_LEADER } from '../metadata/index.ts'
import { type BrokerId, ProducerId, type TopicName, TransactionalId } from '../model/index.ts'
import { apis, BatchOffsets, ErrorCode, errorInfo, isTransactional } from '../protocol/index.ts'
import type { ProduceEntry, ProduceResult } from '../replication/index.ts'
import { BrokerConnections } from './broker-connections.ts'

export interface TxnVerification {
  readonly transactionalId: string
  readonly producerId: bigint
  readonly producerEpoch: number
  readonly partitions: readonly TxnPartition[]
  /** true: the coordinator adds the partitions (transaction.version 2); false: verifyOnly. */
  readonly addPartitions: boolean
  /** Whether the client knows TRANSACTION_ABORTABLE (Produce v11+, Kafka's genericErrorSupported). */
  readonly abortableKnown: boolean
}

interface Pending {
  readonly v: TxnVerification
  readonly partitions: Map<string, TxnPartition>
  readonly waiters: ((errors: ReadonlyMap<string, ErrorCode>) => void)[]
}

export interface TxnVerifierOptions {
  readonly nodeId: BrokerId
  readonly image: () => MetadataImage
  readonly listenerName: string | null
  readonly security?: ClientSecurity
  readonly clock: Clock
  readonly transport: Transport
  readonly requestTimeoutMs: number
}

export class TxnVerifier {
  readonly #o: TxnVerifierOptions
  readonly #conns: BrokerConnections
  /** Per coordinator node: the verifications waiting for the next request. */
  readonly #queued = new Map<BrokerId, Pending[]>()
  readonly #inFlight = new Set<BrokerId>()

  constructor(options: TxnVerifierOptions) {
    this.#o = options
    this.#conns = new BrokerConnections({
      ...options,
      clientId: `broker-${options.nodeId}-add-partitions-to-txn-sender`,
    })
  }

  /** Each partition's answer, keyed by `txnPartitionKey`. */
  verify(v: TxnVerification): Promise<ReadonlyMap<string, ErrorCode>> {
    const all = (e: ErrorCode) => new Map(v.partitions.map((p) => [txnPartitionKey(p), e]))
    const coordinator = this.#coordinatorOf(v.transactionalId)
    if (coordinator === null) return Promise.resolve(all(ErrorCode.CoordinatorNotAvailable))
    return new Promise((resolve) => {
      const queue = this.#queued.get(coordinator) ?? []
      this.#queued.set(coordinator, queue)
      // The same producer's verifications gather into one entry of the next request.
      const same = queue.find(
        (q) =>
          q.v.transactionalId === v.transactionalId &&
          q.v.producerId === v.producerId &&
          q.v.producerEpoch === v.producerEpoch &&
          q.v.addPartitions === v.addPartitions &&
          q.v.abortableKnown === v.abortableKnown,
      )
      const entry = same ?? { v, partitions: new Map<string, TxnPartition>(), waiters: [] }
      for (const p of v.partitions) entry.partitions.set(txnPartitionKey(p), p)
      entry.waiters.push(resolve)
      if (same === undefined) queue.push(entry)
      this.#maybeSend(coordinator)
    })
  }

  #coordinatorOf(transactionalId: string): BrokerId | null {
    const topic = this.#o.image().topicsByName.get(TRANSACTION_STATE_TOPIC_NAME)
    if (topic === undefined || topic.partitions.size === 0) return null
    const leader = topic.partitions.get(partitionForGroup(transactionalId, topic.partitions.size))?.leader
    return leader === undefined || leader === NO_LEADER ? null : leader
  }

  #maybeSend(coordinator: BrokerId): void {
    if (this.#inFlight.has(coordinator)) return
    const queue = this.#queued.get(coordinator) ?? []
    // One entry per transactional id in a request; a second one waits for the next.
    const batch: Pending[] = []
    const rest: Pending[] = []
    for (const q of queue) {
      if (batch.some((b) => b.v.transactionalId === q.v.transactionalId)) rest.push(q)
      else batch.push(q)
    }
    if (batch.length === 0) return
    if (rest.length === 0) this.#queued.delete(coordinator)
    else this.#queued.set(coordinator, rest)
    this.#inFlight.add(coordinator)
    void this.#send(coordinator, batch).finally(() => {
      this.#inFlight.delete(coordinator)
      this.#maybeSend(coordinator)
    })
  }

  async #send(coordinator: BrokerId, batch: readonly Pending[]): Promise<void> {
    const answers = batch.map(() => new Map<string, ErrorCode>())
    const fillAll = (errorCode: ErrorCode) => {
      batch.forEach((b, i) => {
        for (const k of b.partitions.keys()) answers[i]!.set(k, errorCode)
      })
    }
    try {
      const c = await this.#conns.get(coordinator)
      const version = c.versionFor(apis.AddPartitionsToTxn)
      if (version === undefined || version < 4) fillAll(ErrorCode.InvalidTxnState)
      else {
        const res = await c.request(apis.AddPartitionsToTxn, version, {
          transactions: batch.map((b) => {
            const byTopic = new Map<TopicName, number[]>()
            for (const p of b.partitions.values()) {
              const t = p.topic as TopicName
              byTopic.set(t, [...(byTopic.get(t) ?? []), p.partition])
            }
            return {
              transactionalId: TransactionalId(b.v.transactionalId),
              producerId: ProducerId(b.v.producerId),
              producerEpoch: b.v.producerEpoch,
              verifyOnly: !b.v.addPartitions,
              topics: [...byTopic].map(([name, partitions]) => ({ name, partitions })),
            }
          }),
        })
        if (res.errorCode !== ErrorCode.None) {
          // The producer must not see CLUSTER_AUTHORIZATION_FAILED: the verification did not complete.
          fillAll(
            res.errorCode === ErrorCode.ClusterAuthorizationFailed
              ? ErrorCode.InvalidTxnState
              : (res.errorCode as ErrorCode),
          )
        } else {
          fillAll(ErrorCode.InvalidTxnState)
          batch.forEach((b, i) => {
            const r = res.resultsByTransaction.find((t) => t.transactionalId === b.v.transactionalId)
            for (const t of r?.topicResults ?? []) {
              for (const p of t.resultsByPartition) {
                const key = txnPartitionKey({ topic: t.name, partition: p.partitionIndex })
                if (answers[i]!.has(key)) answers[i]!.set(key, mapped(p.partitionErrorCode, b.v))
              }
            }
          })
        }
      }
    } catch {
      this.#conns.drop(coordinator)
      fillAll(ErrorCode.NetworkException)
    }
    batch.forEach((b, i) => {
      for (const w of b.waiters) w(answers[i]!)
    })
  }

  close(): void {
    this.#conns.close()
  }
}

function mapped(code: number, v: TxnVerification): ErrorCode {
  if (code === ErrorCode.ProducerFenced) return ErrorCode.InvalidProducerEpoch
  if (code === ErrorCode.TransactionAbortable && !v.abortableKnown) return ErrorCode.InvalidTxnState
  return code as ErrorCode
}

/**
 * Kafka's internal `add.partitions.to.txn.retry.backoff.ms` and `...backoff.max.ms`: under
 * transaction version 2 a produce that finds the producer's previous transaction still completing
 * (CONCURRENT_TRANSACTIONS: its markers are being written) asks the coordinator again after this
 * backoff, for up to the max, instead of answering a retriable error the client backs off for
 * `retry.backoff.ms` (100 ms) on.
 */
export const ADD_PARTITIONS_RETRY_BACKOFF_MS = 20
export const ADD_PARTITIONS_RETRY_MAX_MS = 100
/** How often a partition whose guard a marker voided during its verification is asked again. */
export const VOIDED_REASKS_MAX = 3

/** Where `appendVerified` looks up and appends. */
export interface VerifiedAppendPorts {
  readonly verifier: TxnVerifier
  readonly clock: Clock
  startTxnVerification(
    topic: string,
    partition: number,
    producerId: bigint,
    producerEpoch: number,
  ): object | null | undefined
  appendRecords(
    entries: readonly ProduceEntry[],
    options: { readonly acks: number; readonly timeoutMs: number },
  ): Promise<ProduceResult[]>
}

/**
 * Kafka's ReplicaManager.appendRecords with `transaction.partition.verification.enable`: the
 * transactional batches whose producer has no open transaction on their partition go to the
 * coordinator first (Produce v12+ adds the partitions, older versions verify them); each appends
 * with its guard once the coordinator said yes, else answers as Kafka maps the coordinator's
 * error (retriable ones as NOT_ENOUGH_REPLICAS, which old clients retry without a metadata
 * refresh). A producer whose transaction is open on every partition costs no round trip.
 */
export async function appendVerified(
  ports: VerifiedAppendPorts,
  entries: readonly ProduceEntry[],
  options: {
    readonly acks: number
    readonly timeoutMs: number
    readonly transactionalId: string | null
    readonly apiVersion: number
  },
): Promise<ProduceResult[]> {
  const txnId = options.transactionalId
  const transactional = entries.map((e) => isTransactional(e.records.readInt16BE(BatchOffsets.attributes)))
  if (txnId === null || !transactional.includes(true)) return ports.appendRecords(entries, options)
  const producerIds = new Set<bigint>()
  entries.forEach((e, i) => {
    if (transactional[i]) producerIds.add(e.records.readBigInt64BE(BatchOffsets.producerId))
  })
  if (producerIds.size > 1) {
    return entries.map(() =>
      failed(ErrorCode.InvalidProducerIdMapping, 'Transactional records contained more than one producer ID'),
    )
  }
  const first = entries[transactional.indexOf(true)]!.records
  const producerId = first.readBigInt64BE(BatchOffsets.producerId)
  const producerEpoch = first.readInt16BE(BatchOffsets.producerEpoch)
  // A partition not led here (yet) answers NOT_LEADER_OR_FOLLOWER, as Kafka's, which clients retry.
  const notLeader = new Set<number>()
  const guarded = entries.map((e, i) => {
    if (!transactional[i]) return e
    const verificationGuard = ports.startTxnVerification(e.topic, e.partition, producerId, producerEpoch)
    if (verificationGuard === undefined) notLeader.add(i)
    return { ...e, verificationGuard: verificationGuard ?? null }
  })
  const unverified = guarded.filter((e, i) => e.verificationGuard != null && !notLeader.has(i))
  if (unverified.length === 0 && notLeader.size === 0) return ports.appendRecords(guarded, options)
  const addPartitions = options.apiVersion >= 12
  const ask = (partitions: readonly TxnPartition[]) =>
    ports.verifier.verify({
      transactionalId: txnId,
      producerId,
      producerEpoch,
      partitions,
      addPartitions,
      abortableKnown: options.apiVersion >= 11,
    })
  const errors = new Map<string, ErrorCode>()
  let asking: TxnPartition[] = unverified.map((e) => ({ topic: e.topic, partition: e.partition }))
  const startMs = ports.clock.monotonicMs()
  /** Takes entry i's guard again; true when there is one to verify (null: its transaction is open). */
  const retake = (i: number): boolean => {
    const e = guarded[i]!
    const verificationGuard = ports.startTxnVerification(e.topic, e.partition, producerId, producerEpoch)
    if (verificationGuard === undefined) notLeader.add(i)
    guarded[i] = { ...e, verificationGuard: verificationGuard ?? null }
    if (verificationGuard === null) errors.delete(txnPartitionKey(e))
    return verificationGuard != null
  }
  let reasks = 0
  while (asking.length > 0) {
    const asked = asking
    for (const [k, e] of await ask(asked)) errors.set(k, e)
    const askedHere = (e: ProduceEntry) =>
      asked.some((p) => p.topic === e.topic && p.partition === e.partition)
    // The previous transaction's marker, written while the coordinator waited for its completion,
    // voids a guard taken before it: such a partition is asked again at once under a new guard
    // (the coordinator answers at once now). A marker after the answer voids the guard for good.
    const voided: TxnPartition[] = []
    guarded.forEach((e, i) => {
      if (e.verificationGuard == null || !askedHere(e) || errors.get(txnPartitionKey(e)) !== ErrorCode.None)
        return
      if (retake(i) && guarded[i]!.verificationGuard !== e.verificationGuard) {
        voided.push({ topic: e.topic, partition: e.partition })
        // Unverified under the new guard until the coordinator says so again.
        errors.set(txnPartitionKey(e), ErrorCode.ConcurrentTransactions)
      }
    })
    const concurrent = asked.filter(
      (p) =>
        errors.get(txnPartitionKey(p)) === ErrorCode.ConcurrentTransactions &&
        !voided.some((v) => v.topic === p.topic && v.partition === p.partition),
    )
    const waitAgain =
      addPartitions &&
      concurrent.length > 0 &&
      ports.clock.monotonicMs() - startMs + ADD_PARTITIONS_RETRY_BACKOFF_MS <= ADD_PARTITIONS_RETRY_MAX_MS
    asking = voided.length > 0 && reasks++ < VOIDED_REASKS_MAX ? voided : []
    if (!waitAgain) continue
    await new Promise<void>((resolve) => ports.clock.setTimer(ADD_PARTITIONS_RETRY_BACKOFF_MS, resolve))
    // The previous transaction's marker voids a guard taken before it: each retry takes a new one.
    guarded.forEach((e, i) => {
      if (!concurrent.some((p) => p.topic === e.topic && p.partition === e.partition)) return
      if (retake(i)) asking.push({ topic: e.topic, partition: e.partition })
    })
  }
  const refused = new Map<number, ProduceResult>()
  const passing: ProduceEntry[] = []
  guarded.forEach((e, i) => {
    if (notLeader.has(i)) {
      refused.set(i, failed(ErrorCode.NotLeaderOrFollower, null))
      return
    }
    const errorCode =
      e.verificationGuard != null
        ? (errors.get(txnPartitionKey(e)) ?? ErrorCode.InvalidTxnState)
        : ErrorCode.None
    if (errorCode === ErrorCode.None) passing.push(e)
    else refused.set(i, verificationFailure(errorCode))
  })
  const appended = passing.length === 0 ? [] : await ports.appendRecords(passing, options)
  let next = 0
  return guarded.map((_, i) => refused.get(i) ?? appended[next++]!)
}

function failed(errorCode: ErrorCode, errorMessage: string | null): ProduceResult {
  return { errorCode, errorMessage, baseOffset: -1n, logAppendTimeMs: -1, logStartOffset: -1n }
}

function verificationFailure(errorCode: ErrorCode): ProduceResult {
  switch (errorCode) {
    case ErrorCode.InvalidTxnState:
      return failed(errorCode, 'Partition was not added to the transaction')
    case ErrorCode.ConcurrentTransactions:
    case ErrorCode.NetworkException:
    case ErrorCode.CoordinatorLoadInProgress:
    case ErrorCode.CoordinatorNotAvailable:
    case ErrorCode.NotCoordinator:
      return failed(
        ErrorCode.NotEnoughReplicas,
        `Unable to verify the partition has been added to the transaction. Underlying error: ${errorInfo(errorCode)?.name ?? errorCode}`,
      )
    default:
      return failed(errorCode, null)
  }
}

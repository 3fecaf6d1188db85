/**
 * The group coordinator, wired: a GroupCoordinator persisting through the replica manager, told
 * which `__consumer_offsets` partitions this broker leads after each metadata publication, the
 * topic created through the controller on the first FindCoordinator, and the group handlers. No
 * group logic of its own.
 */
import type { EffectiveConfig } from '../config/index.ts'
import {
  type CoordinatorLocation,
  CoordinatorType,
  coordinatorError,
  GROUP_METADATA_TOPIC_NAME,
  GroupCoordinator,
  groupConfigFrom,
  locateGroupCoordinator,
  offsetsTopicConfigFrom,
  partitionForGroup,
  ReplicaOffsetsLog,
} from '../coordinator/index.ts'
import type { Clock, Random } from '../io/index.ts'
import type { MetadataImage } from '../metadata/index.ts'
import type { GroupId, TopicName } from '../model/index.ts'
import { type CreateTopicsResponseData, ErrorCode } from '../protocol/index.ts'
import type { ReplicaManager } from '../replication/index.ts'
import {
  type Handler,
  makeDeleteGroupsHandler,
  makeDescribeGroupsHandler,
  makeFindCoordinatorHandler,
  makeHeartbeatHandler,
  makeJoinGroupHandler,
  makeLeaveGroupHandler,
  makeListGroupsHandler,
  makeOffsetCommitHandler,
  makeOffsetDeleteHandler,
  makeOffsetFetchHandler,
  makeSyncGroupHandler,
  makeTxnOffsetCommitHandler,
} from '../server/index.ts'
import { createCoordinatorTopic, syncCoordinatorLeadership } from './coordinator-leadership.ts'
import { type TxnVerifier, VOIDED_REASKS_MAX } from './txn-verifier.ts'

/**
 * How long a FindCoordinator waits for this broker to become a group's coordinator (a new
 * `__consumer_offsets` applied here and its partitions opened: ~100-300 ms for 50) before it answers
 * COORDINATOR_NOT_AVAILABLE. Short: a connection answers in order, so the wait holds the client's
 * other requests on it too (where a partition cannot be led, every such FindCoordinator waits it out).
 */
export const PENDING_COORDINATOR_WAIT_MS = 500

/**
 * How long a group request waits for this broker to finish loading (or to start loading) the
 * group's `__consumer_offsets` partition before it is answered COORDINATOR_LOAD_IN_PROGRESS. Longer
 * than FindCoordinator's: the client was told this broker coordinates, and the partition is led
 * here or about to be.
 */
export const LOADING_COORDINATOR_WAIT_MS = 5_000

export interface GroupCoordinationOptions {
  readonly effective: EffectiveConfig
  readonly clock: Clock
  readonly random: Random
  readonly replicas: ReplicaManager
  readonly image: () => MetadataImage
  /** CreateTopics of `__consumer_offsets` through the controller, as this broker (`internalTopicRequest`). */
  readonly createInternalTopic: (
    spec: InternalTopicSpec,
  ) => Promise<CreateTopicsResponseData.CreateTopicsResponseIn>
  readonly log: (level: 'info' | 'warn' | 'error', message: string) => void
  /** FindCoordinator of transactional ids (key type 1); absent: COORDINATOR_NOT_AVAILABLE. */
  readonly transactions?: {
    findCoordinators(keys: readonly string[], listenerName: string): Promise<CoordinatorLocation[]>
  }
  /** KIP-890's verifications of TxnOffsetCommit; absent without `transaction.partition.verification.enable`. */
  readonly txnVerifier?: TxnVerifier | null
}

export interface InternalTopicSpec {
  /** `__consumer_offsets` unless given (`__transaction_state`). */
  readonly topic?: TopicName
  readonly partitions: number
  readonly replicationFactor: number
  readonly segmentBytes: number
  /** `__transaction_state`: its compression.type and min.insync.replicas (transaction.state.log.min.isr). */
  readonly transactionState?: { readonly insyncReplicasMin: number }
}

/** The CreateTopics of `__consumer_offsets` or `__transaction_state`: Kafka's topic configs for each. */
export function internalTopicRequest(o: InternalTopicSpec) {
  const txn = o.transactionState
  return {
    topics: [
      {
        name: o.topic ?? GROUP_METADATA_TOPIC_NAME,
        numPartitions: o.partitions,
        replicationFactor: o.replicationFactor,
        assignments: [],
        configs: [
          { name: 'cleanup.policy', value: 'compact' },
          { name: 'compression.type', value: txn === undefined ? 'producer' : 'uncompressed' },
          { name: 'segment.bytes', value: String(o.segmentBytes) },
          ...(txn === undefined
            ? []
            : [
                { name: 'min.insync.replicas', value: String(txn.insyncReplicasMin) },
                { name: 'unclean.leader.election.enable', value: 'false' },
              ]),
        ],
      },
    ],
    timeoutMs: 30_000,
    validateOnly: false,
  }
}

export class GroupCoordination {
  #coordinator: GroupCoordinator
  readonly #o: GroupCoordinationOptions
  readonly #topic: ReturnType<typeof offsetsTopicConfigFrom>
  #sync: Promise<void> = Promise.resolve()
  #syncQueued = false
  /** Woken at the end of each leadership sync (`#nextSync`). */
  readonly #syncWaiters = new Set<() => void>()
  #creating: Promise<boolean> | null = null
  #closed = false

  constructor(options: GroupCoordinationOptions) {
    this.#o = options
    this.#topic = offsetsTopicConfigFrom(options.effective)
    this.#coordinator = this.#newCoordinator(this.#topic.partitionCount)
    options.replicas.onReconciled(() => this.onPublish())
  }

  get coordinator(): GroupCoordinator {
    return this.#coordinator
  }

  #newCoordinator(partitionCount: number): GroupCoordinator {
    return new GroupCoordinator({
      config: groupConfigFrom(this.#o.effective),
      partitionCount,
      retentionCheckIntervalMs: this.#topic.retentionCheckIntervalMs,
      log: new ReplicaOffsetsLog(this.#o.replicas, {
        commitTimeoutMs: this.#o.effective.int('offsets.commit.timeout.ms'),
      }),
      clock: this.#o.clock,
      random: this.#o.random,
      logger: (level, message) => this.#o.log(level, `group coordinator: ${message}`),
      leadsPartition: (partition) =>
        this.#o.image().topicsByName.get(GROUP_METADATA_TOPIC_NAME)?.partitions.get(partition)?.leader ===
        this.#o.effective.int('node.id'),
    })
  }

  /**
   * After each metadata publication and each partition the replica manager reconciles: load the
   * partitions led here, unload the others. One sync at a time; calls while one waits to run share it.
   */
  onPublish(): void {
    if (this.#syncQueued) return
    this.#syncQueued = true
    this.#sync = this.#sync
      .then(() => {
        this.#syncQueued = false
        return this.#syncLeadership()
      })
      .catch((e: unknown) => {
        this.#o.log('error', `group coordinator: ${(e as Error).stack ?? String(e)}`)
      })
      .finally(() => {
        for (const wake of [...this.#syncWaiters]) wake()
        this.#coordinator.wakeLoadWaiters()
      })
  }

  /** Elections and resignations from what the replica manager serves now (no waiting for it). */
  #syncLeadership(): void {
    if (this.#closed) return
    const topic = this.#o.image().topicsByName.get(GROUP_METADATA_TOPIC_NAME)
    if (topic !== undefined && topic.partitions.size !== this.#coordinator.partitionCount) {
      // Kafka takes the partition count from the topic once it exists.
      this.#o.log(
        'warn',
        `${GROUP_METADATA_TOPIC_NAME} has ${topic.partitions.size} partitions, offsets.topic.num.partitions says ${this.#coordinator.partitionCount}: using the topic's`,
      )
      this.#coordinator.close()
      this.#coordinator = this.#newCoordinator(topic.partitions.size)
    }
    syncCoordinatorLeadership(
      this.#coordinator,
      GROUP_METADATA_TOPIC_NAME,
      this.#o.image(),
      this.#o.replicas,
      this.#o.effective.int('node.id'),
    )
  }

  /**
   * FindCoordinator: groups here (the first one creates `__consumer_offsets`), transactional ids by
   * the transaction coordinator.
   */
  async findCoordinators(
    keyType: number,
    keys: readonly string[],
    listenerName: string,
  ): Promise<CoordinatorLocation[]> {
    if (keyType === CoordinatorType.Transaction && this.#o.transactions !== undefined) {
      return this.#o.transactions.findCoordinators(keys, listenerName)
    }
    if (keyType !== CoordinatorType.Group) {
      return keys.map(() =>
        coordinatorError(ErrorCode.CoordinatorNotAvailable, 'Weir has no share coordinator yet'),
      )
    }
    // The image can name this broker before its coordinator is told of the partition (the replica
    // manager opens the partitions first, ~100 ms for a new __consumer_offsets): not a coordinator
    // yet, or the client's next request gets NOT_COORDINATOR (librdkafka's committed() fails on it).
    // Such keys, and those of a topic being created, are pending: answered once told, or
    // COORDINATOR_NOT_AVAILABLE after PENDING_COORDINATOR_WAIT_MS.
    const myId = this.#o.effective.int('node.id')
    const pending = (l: CoordinatorLocation | 'no-topic', key: string) =>
      l === 'no-topic' ||
      (l.errorCode === ErrorCode.None &&
        l.nodeId === myId &&
        !this.#coordinator
          .partitions()
          .some((p) => p.partition === partitionForGroup(key, this.#coordinator.partitionCount)))
    const locate = () => keys.map((key) => locateGroupCoordinator(this.#o.image(), key, listenerName))
    const wait = locate().some((l) => l === 'no-topic') ? await this.#createTopic() : true
    // Clients ask again after COORDINATOR_NOT_AVAILABLE only after a backoff (librdkafka: ~1 s,
    // which every first consumer of a fresh cluster paid): wait for the coordinator instead.
    const deadline = this.#o.clock.monotonicMs() + PENDING_COORDINATOR_WAIT_MS
    let found: ReturnType<typeof locate>
    for (;;) {
      found = locate()
      const left = deadline - this.#o.clock.monotonicMs()
      if (!wait || left <= 0 || this.#closed || !found.some((l, i) => pending(l, keys[i]!))) break
      await this.#nextSync(left)
    }
    return found.map((l, i) =>
      pending(l, keys[i]!)
        ? coordinatorError(ErrorCode.CoordinatorNotAvailable, 'The coordinator is not available.')
        : (l as CoordinatorLocation),
    )
  }

  /** Resolves after the next leadership sync ends, or after `ms`, whichever comes first. */
  #nextSync(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        this.#syncWaiters.delete(wake)
        this.#o.clock.clearTimer(timer)
        resolve()
      }
      const timer = this.#o.clock.setTimer(ms, wake)
      this.#syncWaiters.add(wake)
    })
  }

  /** Creates `__consumer_offsets` once (concurrent callers share the request); false if that failed. */
  #createTopic(): Promise<boolean> {
    this.#creating ??= createCoordinatorTopic(
      GROUP_METADATA_TOPIC_NAME,
      () =>
        this.#o.createInternalTopic({
          partitions: this.#topic.partitionCount,
          replicationFactor: this.#topic.replicationFactor,
          segmentBytes: this.#topic.segmentBytes,
        }),
      this.#o.log,
    ).finally(() => {
      this.#creating = null
    })
    return this.#creating
  }

  /** TxnOffsetCommit's KIP-890 step: no round trip when the transaction is open on the group's partition. */
  async #verifyOffsetsPartition(
    verifier: TxnVerifier,
    input: {
      transactionalId: string
      groupId: string
      producerId: bigint
      producerEpoch: number
      addPartition: boolean
      abortableKnown: boolean
    },
  ): Promise<{ errorCode: ErrorCode; verificationGuard: object | null | undefined }> {
    const partition = partitionForGroup(input.groupId, this.#coordinator.partitionCount)
    const topic = GROUP_METADATA_TOPIC_NAME
    const guard = () =>
      this.#o.replicas.startTxnVerification(topic, partition, input.producerId, input.producerEpoch)
    let verificationGuard = guard()
    for (let asked = 0; asked <= VOIDED_REASKS_MAX; asked++) {
      // Open there already: the write still checks it is (a marker may end it meanwhile). Not led
      // here (undefined): asked all the same, and the write, unguarded, meets the leadership.
      if (verificationGuard === null) return { errorCode: ErrorCode.None, verificationGuard: null }
      const errors = await verifier.verify({
        transactionalId: input.transactionalId,
        producerId: input.producerId,
        producerEpoch: input.producerEpoch,
        partitions: [{ topic, partition }],
        addPartitions: input.addPartition,
        abortableKnown: input.abortableKnown,
      })
      const errorCode = errors.values().next().value ?? ErrorCode.InvalidTxnState
      if (errorCode !== ErrorCode.None || verificationGuard === undefined)
        return { errorCode, verificationGuard }
      // A marker of the previous transaction, written while the coordinator waited for its
      // completion, voids the guard taken before: ask again under a new one (as appendVerified).
      const now = guard()
      if (now === verificationGuard) return { errorCode, verificationGuard }
      verificationGuard = now
    }
    return { errorCode: ErrorCode.ConcurrentTransactions, verificationGuard }
  }

  /** The client-facing group handlers. */
  handlers(): Handler[] {
    const c = () => this.#coordinator
    // A group request to this broker while it loads (or is about to load) the group's partition
    // waits for the load, as FindCoordinator waits to name it, instead of COORDINATOR_LOAD_IN_PROGRESS.
    const loaded = async <T>(groupIds: readonly GroupId[], call: () => T | Promise<T>): Promise<T> => {
      await c().whenLoaded(groupIds, LOADING_COORDINATOR_WAIT_MS)
      return call()
    }
    const verifier = this.#o.txnVerifier
    const partitionExists = (topic: TopicName, partition: number) =>
      this.#o.image().topicsByName.get(topic)?.partitions.has(partition) === true
    return [
      makeFindCoordinatorHandler(this),
      makeJoinGroupHandler({
        joinGroup: (input) => loaded([input.groupId], () => c().joinGroup(input)),
      }),
      makeSyncGroupHandler({
        syncGroup: (input) => loaded([input.groupId], () => c().syncGroup(input)),
      }),
      makeHeartbeatHandler({
        heartbeat: (input) => loaded([input.groupId], () => c().heartbeat(input)),
      }),
      makeLeaveGroupHandler({
        leaveGroup: (input) => loaded([input.groupId], () => c().leaveGroup(input)),
      }),
      makeOffsetCommitHandler({
        commitOffsets: (input) => loaded([input.groupId], () => c().commitOffsets(input)),
        partitionExists,
      }),
      makeTxnOffsetCommitHandler({
        commitTransactionalOffsets: (input) =>
          loaded([input.groupId], () => c().commitTransactionalOffsets(input)),
        partitionExists,
        ...(verifier == null
          ? {}
          : { verifyInTransaction: (input) => this.#verifyOffsetsPartition(verifier, input) }),
      }),
      makeOffsetFetchHandler({
        fetchOffsets: (groupId, topics, requireStable) =>
          loaded([groupId], () =>
            requireStable ? c().fetchStableOffsets(groupId, topics) : c().fetchOffsets(groupId, topics),
          ),
      }),
      makeDescribeGroupsHandler({
        describeGroups: (ids, ops, missingAsError) =>
          loaded(ids, () => c().describeGroups(ids, ops, missingAsError)),
      }),
      makeListGroupsHandler({ listGroups: (states, types) => c().listGroups(states, types) }),
      makeDeleteGroupsHandler({ deleteGroups: (ids) => loaded(ids, () => c().deleteGroups(ids)) }),
      makeOffsetDeleteHandler({
        deleteOffsets: (input) => loaded([input.groupId], () => c().deleteOffsets(input)),
        partitionExists,
      }),
    ]
  }

  /**
   * A transaction marker was written to `__consumer_offsets` partition `partition` (WriteTxnMarkers,
   * `DataPathOptions.onTransactionCompleted`): the producer's pending offsets there are committed or
   * dropped. Resolves once applied; a marker repeated changes nothing.
   */
  onTransactionCompleted(
    partition: number,
    producerId: bigint,
    _producerEpoch: number,
    committed: boolean,
  ): Promise<void> {
    return this.#coordinator.completeTransaction(partition, producerId, committed)
  }

  /** Stops: every partition unloaded, waiting requests answered NOT_COORDINATOR. */
  close(): void {
    this.#closed = true
    for (const wake of [...this.#syncWaiters]) wake()
    this.#coordinator.close()
  }
}

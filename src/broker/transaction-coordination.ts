/**
 * The transaction coordinator, wired: a TransactionCoordinator persisting through the replica
 * manager (acks=all on `__transaction_state`), its markers sent over the wire to partition leaders
 * (`WireTxnMarkerChannel`), new producer ids from the broker's ProducerIdManager, told which
 * `__transaction_state` partitions this broker leads after each metadata publication, the topic
 * created through the controller on the first FindCoordinator for a transactional id, and the
 * transaction handlers. No transaction logic of its own.
 */
import type { ClientSecurity } from '../client/index.ts'
import type { EffectiveConfig } from '../config/index.ts'
import {
  type CoordinatorLocation,
  coordinatorError,
  GROUP_METADATA_TOPIC_NAME,
  locateCoordinator,
  partitionForGroup,
  ReplicaOffsetsLog,
  TRANSACTION_STATE_TOPIC_NAME,
  TransactionCoordinator,
} from '../coordinator/index.ts'
import type { Clock, Transport } from '../io/index.ts'
import type { MetadataImage } from '../metadata/index.ts'
import { BrokerId } from '../model/index.ts'
import type { CreateTopicsResponseData } from '../protocol/index.ts'
import { ErrorCode } from '../protocol/index.ts'
import type { ProducerIdManager, ReplicaManager } from '../replication/index.ts'
import { type Handler, makeTransactionHandlers } from '../server/index.ts'
import { createCoordinatorTopic, syncCoordinatorLeadership } from './coordinator-leadership.ts'
import { type InternalTopicSpec, LOADING_COORDINATOR_WAIT_MS } from './group-coordination.ts'
import { WireTxnMarkerChannel } from './txn-marker-channel.ts'

/** Wait before a marker or a completion write is tried again (Kafka's retry.backoff.ms default). */
const TXN_RETRY_BACKOFF_MS = 100

export interface TransactionCoordinationOptions {
  readonly effective: EffectiveConfig
  readonly clock: Clock
  readonly replicas: ReplicaManager
  readonly producerIds: ProducerIdManager
  readonly image: () => MetadataImage
  readonly createInternalTopic: (
    spec: InternalTopicSpec,
  ) => Promise<CreateTopicsResponseData.CreateTopicsResponseIn>
  readonly transport: Transport
  readonly interBrokerListenerName: string | null
  readonly interBrokerSecurity?: ClientSecurity
  readonly log: (level: 'info' | 'warn' | 'error', message: string) => void
}

export class TransactionCoordination {
  #coordinator: TransactionCoordinator
  readonly #o: TransactionCoordinationOptions
  readonly #markers: WireTxnMarkerChannel
  #sync: Promise<void> = Promise.resolve()
  #syncQueued = false
  #creating: Promise<boolean> | null = null
  #closed = false

  constructor(options: TransactionCoordinationOptions) {
    this.#o = options
    const e = options.effective
    this.#markers = new WireTxnMarkerChannel({
      nodeId: BrokerId(e.int('node.id')),
      image: options.image,
      listenerName: options.interBrokerListenerName,
      ...(options.interBrokerSecurity === undefined ? {} : { security: options.interBrokerSecurity }),
      clock: options.clock,
      transport: options.transport,
      requestTimeoutMs: e.int('request.timeout.ms'),
    })
    this.#coordinator = this.#newCoordinator(e.int('transaction.state.log.num.partitions'))
    options.replicas.onReconciled(() => this.onPublish())
  }

  get coordinator(): TransactionCoordinator {
    return this.#coordinator
  }

  #newCoordinator(partitionCount: number): TransactionCoordinator {
    const e = this.#o.effective
    const image = this.#o.image
    return new TransactionCoordinator({
      config: {
        transactionTimeoutMsMax: e.int('transaction.max.timeout.ms'),
        abortTimedOutIntervalMs: e.int('transaction.abort.timed.out.transaction.cleanup.interval.ms'),
        removeExpiredIntervalMs: e.int('transaction.remove.expired.transaction.cleanup.interval.ms'),
        transactionalIdExpirationMs: e.int('transactional.id.expiration.ms'),
        // Read at each write: the cluster's finalized transaction.version (0 on a cluster without it).
        get transactionVersionLevel() {
          return image().features.get('transaction.version') ?? 0
        },
        retryBackoffMs: TXN_RETRY_BACKOFF_MS,
      },
      partitionCount,
      log: new ReplicaOffsetsLog(this.#o.replicas, {
        commitTimeoutMs: e.int('offsets.commit.timeout.ms'),
        topic: TRANSACTION_STATE_TOPIC_NAME,
      }),
      markers: this.#markers,
      clock: this.#o.clock,
      newProducerId: () => this.#o.producerIds.generate(),
      logger: (level, message) => this.#o.log(level, `transaction coordinator: ${message}`),
      leadsPartition: (partition) =>
        this.#o.image().topicsByName.get(TRANSACTION_STATE_TOPIC_NAME)?.partitions.get(partition)?.leader ===
        e.int('node.id'),
    })
  }

  /** As GroupCoordination.onPublish: load the partitions led here, unload the others. */
  onPublish(): void {
    if (this.#syncQueued) return
    this.#syncQueued = true
    this.#sync = this.#sync
      .then(() => {
        this.#syncQueued = false
        this.#syncLeadership()
      })
      .catch((e: unknown) =>
        this.#o.log('error', `transaction coordinator: ${(e as Error).stack ?? String(e)}`),
      )
      .finally(() => this.#coordinator.wakeLoadWaiters())
  }

  #syncLeadership(): void {
    if (this.#closed) return
    const topic = this.#o.image().topicsByName.get(TRANSACTION_STATE_TOPIC_NAME)
    if (topic !== undefined && topic.partitions.size !== this.#coordinator.partitionCount) {
      this.#coordinator.close()
      this.#coordinator = this.#newCoordinator(topic.partitions.size)
    }
    syncCoordinatorLeadership(
      this.#coordinator,
      TRANSACTION_STATE_TOPIC_NAME,
      this.#o.image(),
      this.#o.replicas,
      this.#o.effective.int('node.id'),
    )
  }

  /**
   * FindCoordinator for transactional ids: the leader of each id's `__transaction_state` partition;
   * the first one creates the topic (COORDINATOR_NOT_AVAILABLE meanwhile, which clients retry).
   */
  async findCoordinators(keys: readonly string[], listenerName: string): Promise<CoordinatorLocation[]> {
    const locate = () =>
      keys.map((key) => locateCoordinator(this.#o.image(), TRANSACTION_STATE_TOPIC_NAME, key, listenerName))
    let found = locate()
    if (found.some((l) => l === 'no-topic')) {
      await this.#createTopic()
      found = locate()
    }
    return found.map((l) =>
      l === 'no-topic'
        ? coordinatorError(ErrorCode.CoordinatorNotAvailable, 'The coordinator is not available.')
        : l,
    )
  }

  #createTopic(): Promise<boolean> {
    const e = this.#o.effective
    this.#creating ??= createCoordinatorTopic(
      TRANSACTION_STATE_TOPIC_NAME,
      () =>
        this.#o.createInternalTopic({
          topic: TRANSACTION_STATE_TOPIC_NAME,
          partitions: e.int('transaction.state.log.num.partitions'),
          replicationFactor: e.int('transaction.state.log.replication.factor'),
          segmentBytes: e.int('transaction.state.log.segment.bytes'),
          transactionState: { insyncReplicasMin: e.int('transaction.state.log.min.isr') },
        }),
      this.#o.log,
    ).finally(() => {
      this.#creating = null
    })
    return this.#creating
  }

  /** InitProducerId with a transactional id (for DataPath's handler). */
  async initProducerId(
    req: Parameters<TransactionCoordinator['initProducerId']>[0],
  ): ReturnType<TransactionCoordinator['initProducerId']> {
    await this.#coordinator.whenLoaded([req.transactionalId], LOADING_COORDINATOR_WAIT_MS)
    return this.#coordinator.initProducerId(req)
  }

  /** AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, DescribeTransactions, ListTransactions. */
  handlers(): Handler[] {
    const c = () => this.#coordinator
    const loaded = async <T>(ids: readonly string[], call: () => T | Promise<T>): Promise<T> => {
      await c().whenLoaded(ids, LOADING_COORDINATOR_WAIT_MS)
      return call()
    }
    const offsetsPartitions = () =>
      this.#o.image().topicsByName.get(GROUP_METADATA_TOPIC_NAME)?.partitions.size ||
      this.#o.effective.int('offsets.topic.num.partitions')
    return makeTransactionHandlers({
      addPartitionsToTxn: (req) => loaded([req.transactionalId], () => c().addPartitionsToTxn(req)),
      verifyPartitionsInTxn: (req) => loaded([req.transactionalId], () => c().verifyPartitionsInTxn(req)),
      addOffsetsToTxn: (req) =>
        loaded([req.transactionalId], () =>
          c().addOffsetsToTxn({
            ...req,
            offsetsPartition: partitionForGroup(req.groupId, offsetsPartitions()),
          }),
        ),
      endTxn: (req) => loaded([req.transactionalId], () => c().endTxn(req)),
      describeTransactions: (ids) => loaded(ids, () => c().describeTransactions(ids)),
      listTransactions: (filter) => c().listTransactions(filter),
      topicExists: (topic) => this.#o.image().topicsByName.has(topic),
    })
  }

  close(): void {
    this.#closed = true
    this.#coordinator.close()
    this.#markers.close()
  }
}

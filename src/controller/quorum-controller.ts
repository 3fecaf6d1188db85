/**
 * The controller shell: serializes requests, decides each against the latest image (committed plus
 * what it proposed and has not seen committed), proposes the records through the quorum, and
 * answers once they commit. Active only on the quorum leader after it has replayed its own epoch's
 * start; on losing leadership every waiting request is answered NOT_CONTROLLER.
 */
import type { Clock, Random, TimerHandle } from '../io/index.ts'
import { type ImagePublication, MetadataDelta, type MetadataImage } from '../metadata/index.ts'
import type { BrokerId } from '../model/index.ts'
import {
  type AllocateProducerIdsRequestData,
  type AllocateProducerIdsResponseData,
  type AlterConfigsRequestData,
  type AlterConfigsResponseData,
  type AlterPartitionReassignmentsRequestData,
  type AlterPartitionReassignmentsResponseData,
  type AlterPartitionRequestData,
  type AlterPartitionResponseData,
  type AlterUserScramCredentialsRequestData,
  type AlterUserScramCredentialsResponseData,
  type BrokerHeartbeatRequestData,
  type BrokerHeartbeatResponseData,
  type BrokerRegistrationRequestData,
  type BrokerRegistrationResponseData,
  type CreateAclsRequestData,
  type CreateAclsResponseData,
  type CreatePartitionsRequestData,
  type CreatePartitionsResponseData,
  type CreateTopicsRequestData,
  type CreateTopicsResponseData,
  type DeleteAclsRequestData,
  type DeleteAclsResponseData,
  type DeleteTopicsRequestData,
  type DeleteTopicsResponseData,
  decodeMetadataRecord,
  type ElectLeadersRequestData,
  type ElectLeadersResponseData,
  ErrorCode,
  encodeMetadataRecord,
  type IncrementalAlterConfigsRequestData,
  type IncrementalAlterConfigsResponseData,
  type ListPartitionReassignmentsRequestData,
  type ListPartitionReassignmentsResponseData,
  metadataRecordTypes as T,
  type UpdateFeaturesRequestData,
  type UpdateFeaturesResponseData,
} from '../protocol/index.ts'
import type { ProposeResult, RaftStatus } from '../quorum/index.ts'
import { deleteAclsFilters } from '../security/index.ts'
import { createAcls, deleteAcls } from './acls.ts'
import { alterPartition } from './alter-partition.ts'
import { brokerHeartbeat, fenceBroker, registerBroker } from './brokers.ts'
import { alterConfigs, type ConfigDecisionOptions, incrementalAlterConfigs } from './configs.ts'
import {
  type ControllerSettings,
  type Decision,
  type DecisionContext,
  EXCESSIVE_BATCH_MESSAGE,
  type PendingRecord,
  PolicyViolationError,
  pendingRecord,
  RECORDS_PER_BATCH_MAX,
  RECORDS_PER_USER_OP_MAX,
} from './decision.ts'
import { electLeaders } from './elections.ts'
import { type SupportedFeature, updateFeatures } from './features.ts'
import { hasLeaderless, rebalancePreferredLeaders, uncleanElections } from './leadership.ts'
import { allocateProducerIds } from './producer-ids.ts'
import {
  alterPartitionReassignments,
  completeReassignments,
  isReassigning,
  listPartitionReassignments,
} from './reassignment.ts'
import { alterUserScramCredentials } from './scram.ts'
import { type CreateTopicsOptions, createPartitions, createTopics, deleteTopics } from './topics.ts'

/** What the controller needs of the quorum. */
export interface ControllerQuorum {
  propose(data: readonly Uint8Array[]): ProposeResult
  status(): RaftStatus
}

/** Thrown to a request when this node is not (or stopped being) the active controller. */
export class NotControllerError extends Error {
  override name = 'NotControllerError'
}

/**
 * How a decision's records reach the log. `atomic`: one batch, all or nothing, at most
 * RECORDS_PER_USER_OP_MAX records (every client request but those below). `batched`: in batches of
 * at most RECORDS_PER_BATCH_MAX, each committed on its own, for what Kafka's controller writes as
 * non-atomic results: fencing, unfencing, registration, controlled shutdown, elections and ISR
 * changes, which on a broker with many partitions touch more than one batch holds.
 */
type Atomicity = 'atomic' | 'batched'

export interface QuorumControllerOptions {
  readonly quorum: ControllerQuorum
  readonly clock: Clock
  readonly random: Random
  readonly clusterId: string
  readonly settings: ControllerSettings
  /** `broker.session.timeout.ms` */
  readonly brokerSessionTimeoutMs: number
  readonly validateTopicConfigs: DecisionContext['validateTopicConfigs']
  readonly describeTopicConfigs?: CreateTopicsOptions['describeConfigs']
  /**
   * What AlterConfigs decisions validate with: this node's static config (checks across broker keys,
   * topic defaults) and the controller ids. Default: no static config, this node's id.
   */
  readonly configs?: ConfigDecisionOptions
  /** Finalized features written when the cluster is new (metadata.version, ...). */
  readonly bootstrapFeatures: ReadonlyMap<string, number>
  /** The features and levels this controller's software supports (UpdateFeatures checks them). */
  readonly supportedFeatures?: readonly SupportedFeature[]
  /** Records written after the features when the cluster is new (the `--add-scram` credentials). */
  readonly bootstrapRecords?: readonly PendingRecord[]
  /**
   * The automatic preferred-leader rebalance: `auto.leader.rebalance.enable`,
   * `leader.imbalance.check.interval.seconds` (as ms), `leader.imbalance.per.broker.percentage`.
   * Default: off.
   */
  readonly leaderBalance?: {
    readonly enabled: boolean
    readonly intervalMs: number
    readonly percentage: number
  }
  readonly log?: (level: 'info' | 'warn' | 'error', message: string) => void
}

interface Waiter {
  readonly lastOffset: bigint
  readonly epoch: number
  readonly resolve: () => void
  readonly reject: (e: Error) => void
}

/** How often lapsed broker sessions are looked for. */
const SESSION_CHECK_INTERVAL_MS = 1000
/** How long to wait before retrying a proposal refused for backpressure. */
const BACKPRESSURE_RETRY_MS = 10

export class QuorumController {
  readonly #o: QuorumControllerOptions
  #committed: MetadataImage | null = null
  /** The committed image plus this controller's proposed records; null when not active. */
  #pending: MetadataImage | null = null
  #activeEpoch = -1
  #queue: Promise<void> = Promise.resolve()
  readonly #waiters: Waiter[] = []
  /** Monotonic time of each broker's last heartbeat, for session expiry (leader-local, as in Kafka). */
  readonly #lastHeartbeatMs = new Map<BrokerId, number>()
  /**
   * Each broker's applied metadata offset as its last heartbeat to this controller reported it, in
   * which broker epoch: how far the others are when a broker waits to shut down.
   */
  readonly #reportedOffsets = new Map<BrokerId, { brokerEpoch: bigint; offset: bigint }>()
  /** The offset of the last record that put each broker in controlled shutdown (written here). */
  readonly #controlledShutdownOffsets = new Map<BrokerId, { brokerEpoch: bigint; offset: bigint }>()
  /** Brokers whose fencing is proposed and not decided yet (not checked again meanwhile). */
  readonly #fencing = new Set<BrokerId>()
  #sessionTimer: TimerHandle | null = null
  #balanceTimer: TimerHandle | null = null
  #closed = false

  constructor(options: QuorumControllerOptions) {
    this.#o = options
  }

  get isActive(): boolean {
    return this.#pending !== null
  }

  /** The latest committed image this controller has seen. */
  get image(): MetadataImage | null {
    return this.#committed
  }

  /** Called by the metadata loader for every committed batch, in order. */
  onPublish(p: ImagePublication): void {
    this.#committed = p.image
    const status = this.#o.quorum.status()
    // Our own epoch's leader change is committed: every earlier record is applied; become active.
    for (const lc of p.leaderChanges) {
      if (status.role === 'leader' && lc.epoch === status.epoch && lc.leaderId === status.nodeId)
        this.#activate(lc.epoch)
    }
    if (this.#pending !== null) this.#afterCommit(p)
    const hw = p.image.provenance.offset + 1n
    for (let i = 0; i < this.#waiters.length; ) {
      const w = this.#waiters[i]!
      if (w.lastOffset < hw) {
        this.#waiters.splice(i, 1)
        w.resolve()
      } else i++
    }
  }

  /** Called when the quorum's leadership or epoch changes. */
  onStatus(status: RaftStatus): void {
    if (status.role !== 'leader' || status.epoch !== this.#activeEpoch) this.#deactivate()
  }

  /**
   * Decisions a commit may call for: completing reassignments whose adding replicas joined the ISR
   * (Kafka completes them while handling AlterPartition), and electing leaderless partitions that
   * became electable (a config change allowing unclean election, a broker coming back).
   */
  #afterCommit(p: ImagePublication): void {
    const reassigning = p.changes.changedPartitions.some((c) => {
      const r = c.topic.partitions.get(c.partition)
      return r !== undefined && isReassigning(r)
    })
    const electable =
      (p.changes.changedConfigs.length > 0 ||
        p.changes.changedBrokers.length > 0 ||
        p.changes.changedPartitions.length > 0) &&
      hasLeaderless(p.image)
    if (!reassigning && !electable) return
    void this.#write(
      (image) => ({
        records: [
          ...(reassigning ? completeReassignments(image) : []),
          ...(electable ? uncleanElections(image, this.#configOptions()) : []),
        ],
        response: undefined,
      }),
      'batched',
    ).catch(() => {})
  }

  #scheduleBalance(): void {
    const b = this.#o.leaderBalance
    if (b === undefined || !b.enabled || this.#closed || this.#pending === null) return
    this.#balanceTimer = this.#o.clock.setTimer(b.intervalMs, () => {
      this.#balanceTimer = null
      if (this.#pending === null) return
      void this.#write(
        (image) => ({ records: rebalancePreferredLeaders(image, b.percentage), response: undefined }),
        'batched',
      )
        .then(
          () => {},
          () => {},
        )
        .finally(() => this.#scheduleBalance())
    })
  }

  #activate(epoch: number): void {
    if (this.#activeEpoch === epoch && this.#pending !== null) return
    this.#activeEpoch = epoch
    this.#pending = this.#committed
    const now = this.#o.clock.monotonicMs()
    // A new controller gives every registered broker a full session before fencing it.
    for (const id of this.#committed?.brokers.keys() ?? []) this.#lastHeartbeatMs.set(id, now)
    this.#o.log?.('info', `controller active in epoch ${epoch}`)
    this.#scheduleSessionCheck()
    this.#scheduleBalance()
    if (
      this.#committed !== null &&
      this.#committed.features.size === 0 &&
      this.#o.bootstrapFeatures.size > 0
    ) {
      void this.#bootstrap()
    }
  }

  #deactivate(): void {
    if (this.#pending === null && this.#activeEpoch < 0) return
    this.#pending = null
    this.#activeEpoch = -1
    if (this.#sessionTimer !== null) this.#o.clock.clearTimer(this.#sessionTimer)
    this.#sessionTimer = null
    if (this.#balanceTimer !== null) this.#o.clock.clearTimer(this.#balanceTimer)
    this.#balanceTimer = null
    const error = new NotControllerError('this node is no longer the active controller')
    for (const w of this.#waiters.splice(0)) w.reject(error)
  }

  /** A new cluster's first records: the finalized features (metadata.version and the like). */
  async #bootstrap(): Promise<void> {
    await this.#write(() => ({
      records: [
        ...[...this.#o.bootstrapFeatures].map(([name, featureLevel]) =>
          pendingRecord(T.FeatureLevel, 0, { name, featureLevel }),
        ),
        ...(this.#o.bootstrapRecords ?? []),
      ],
      response: undefined,
    })).catch((e: unknown) => this.#o.log?.('warn', `feature bootstrap failed: ${(e as Error).message}`))
  }

  /**
   * Runs one decision: serialized behind earlier ones, decided against the pending image, proposed,
   * and resolved once committed. Throws NotControllerError when not active.
   */
  #write<R>(decide: (image: MetadataImage) => Decision<R>, atomicity: Atomicity = 'atomic'): Promise<R> {
    const run = async (): Promise<R> => {
      const image = this.#pending
      if (image === null || this.#closed)
        throw new NotControllerError('this node is not the active controller')
      const decision = decide(image)
      if (decision.records.length === 0) return decision.response
      if (atomicity === 'atomic' && decision.records.length > RECORDS_PER_USER_OP_MAX) {
        throw new PolicyViolationError(EXCESSIVE_BATCH_MESSAGE)
      }
      const values = decision.records.map((r) => encodeMetadataRecord(r.type, r.version, r.data))
      let last: { lastOffset: bigint; epoch: number } | null = null
      for (let at = 0; at < values.length; at += RECORDS_PER_BATCH_MAX) {
        const batch = values.slice(at, at + RECORDS_PER_BATCH_MAX)
        let result = this.#o.quorum.propose(batch)
        while (result.kind === 'backpressure') {
          await new Promise<void>((resolve) => this.#o.clock.setTimer(BACKPRESSURE_RETRY_MS, resolve))
          if (this.#pending === null) throw new NotControllerError('lost leadership while waiting')
          result = this.#o.quorum.propose(batch)
        }
        if (result.kind === 'notLeader') {
          this.#deactivate()
          throw new NotControllerError('this node is not the quorum leader')
        }
        // The records are in the log at known offsets: later decisions see them at once.
        const delta = new MetadataDelta(this.#pending ?? image)
        for (const [i, v] of batch.entries()) {
          delta.replay(decodeMetadataRecord(v), {
            offset: result.baseOffset + BigInt(i),
            epoch: result.epoch,
          })
        }
        this.#pending = delta.apply().image
        last = result
      }
      const { lastOffset, epoch } = last!
      const committed = new Promise<void>((resolve, reject) => {
        this.#waiters.push({ lastOffset, epoch, resolve, reject })
      })
      return committed.then(() => decision.response)
    }
    // Decisions run one at a time; waiting for commit does not hold the next decision back.
    const decided = this.#queue.then(run, run)
    this.#queue = decided.then(
      () => undefined,
      () => undefined,
    )
    return decided
  }

  #context(image: MetadataImage): DecisionContext {
    return {
      image,
      random: this.#o.random,
      settings: this.#o.settings,
      validateTopicConfigs: this.#o.validateTopicConfigs,
    }
  }

  createTopics(
    req: CreateTopicsRequestData.CreateTopicsRequest,
    _version?: number,
    internal: { allowInternal?: boolean } = {},
  ): Promise<CreateTopicsResponseData.CreateTopicsResponseIn> {
    const options = {
      ...(this.#o.describeTopicConfigs === undefined
        ? {}
        : { describeConfigs: this.#o.describeTopicConfigs }),
      ...internal,
    }
    return this.#write((image) => createTopics(this.#context(image), req, options))
  }

  /** UpdateFeatures: one atomic batch of FeatureLevelRecords, or a refusal (features.ts). */
  updateFeatures(
    req: UpdateFeaturesRequestData.UpdateFeaturesRequest,
    version = 2,
  ): Promise<UpdateFeaturesResponseData.UpdateFeaturesResponseIn> {
    return this.#write((image) =>
      updateFeatures(
        { image, nodeId: this.#o.quorum.status().nodeId, supported: this.#o.supportedFeatures ?? [] },
        req,
        version,
      ),
    )
  }

  electLeaders(
    req: ElectLeadersRequestData.ElectLeadersRequest,
    version = 2,
  ): Promise<ElectLeadersResponseData.ElectLeadersResponseIn> {
    return this.#write((image) => electLeaders(image, req, version), 'batched')
  }

  alterPartitionReassignments(
    req: AlterPartitionReassignmentsRequestData.AlterPartitionReassignmentsRequest,
  ): Promise<AlterPartitionReassignmentsResponseData.AlterPartitionReassignmentsResponseIn> {
    return this.#write((image) => alterPartitionReassignments(image, req, this.#configOptions()))
  }

  /** Answered from the latest image, in the queue behind earlier decisions (no records). */
  listPartitionReassignments(
    req: ListPartitionReassignmentsRequestData.ListPartitionReassignmentsRequest,
  ): Promise<ListPartitionReassignmentsResponseData.ListPartitionReassignmentsResponseIn> {
    return this.#write((image) => ({ records: [], response: listPartitionReassignments(image, req) }))
  }

  deleteTopics(
    req: DeleteTopicsRequestData.DeleteTopicsRequest,
  ): Promise<DeleteTopicsResponseData.DeleteTopicsResponseIn> {
    return this.#write((image) => deleteTopics(this.#context(image), req))
  }

  createPartitions(
    req: CreatePartitionsRequestData.CreatePartitionsRequest,
  ): Promise<CreatePartitionsResponseData.CreatePartitionsResponseIn> {
    return this.#write((image) => createPartitions(this.#context(image), req))
  }

  alterConfigs(
    req: AlterConfigsRequestData.AlterConfigsRequest,
  ): Promise<AlterConfigsResponseData.AlterConfigsResponseIn> {
    return this.#write((image) => alterConfigs(image, req, this.#configOptions()))
  }

  incrementalAlterConfigs(
    req: IncrementalAlterConfigsRequestData.IncrementalAlterConfigsRequest,
  ): Promise<IncrementalAlterConfigsResponseData.IncrementalAlterConfigsResponseIn> {
    return this.#write((image) => incrementalAlterConfigs(image, req, this.#configOptions()))
  }

  /** The next block of producer ids for a broker (ProducerIdsRecord). */
  allocateProducerIds(
    req: AllocateProducerIdsRequestData.AllocateProducerIdsRequest,
  ): Promise<AllocateProducerIdsResponseData.AllocateProducerIdsResponseIn> {
    return this.#write((image) => allocateProducerIds(image, req))
  }

  /** A partition leader's ISR change (KIP-497), answered once its PartitionChangeRecords commit. */
  alterPartition(
    req: AlterPartitionRequestData.AlterPartitionRequest,
    version = 3,
  ): Promise<AlterPartitionResponseData.AlterPartitionResponseIn> {
    return this.#write((image) => alterPartition(image, req, version), 'batched')
  }

  /** CreateAcls as Kafka's AclControlManager decides it (the broker's AclApis checks come first). */
  createAcls(
    req: CreateAclsRequestData.CreateAclsRequest,
  ): Promise<CreateAclsResponseData.CreateAclsResponseIn> {
    return this.#write((image) => createAcls(image, this.#o.random, req.creations))
  }

  /** DeleteAcls; filters with an UNKNOWN code are a malformed request (the connection closes). */
  deleteAcls(
    req: DeleteAclsRequestData.DeleteAclsRequest,
  ): Promise<DeleteAclsResponseData.DeleteAclsResponseIn> {
    const filters = deleteAclsFilters(req.filters)
    if ('malformed' in filters) return Promise.reject(new Error(filters.malformed))
    return this.#write((image) => deleteAcls(image, filters))
  }

  alterUserScramCredentials(
    req: AlterUserScramCredentialsRequestData.AlterUserScramCredentialsRequest,
  ): Promise<AlterUserScramCredentialsResponseData.AlterUserScramCredentialsResponseIn> {
    return this.#write((image) => alterUserScramCredentials(image, req))
  }

  #configOptions(): ConfigDecisionOptions {
    return this.#o.configs ?? { nodeId: this.#o.quorum.status().nodeId, staticBroker: new Map() }
  }

  registerBroker(
    req: BrokerRegistrationRequestData.BrokerRegistrationRequest,
  ): Promise<BrokerRegistrationResponseData.BrokerRegistrationResponseIn> {
    return this.#write((image) => {
      const d = registerBroker(
        {
          image,
          clusterId: this.#o.clusterId,
          nextOffset: this.#o.quorum.status().logEndOffset,
          hasLiveSession: (id) => this.#hasLiveSession(id),
          finalizedFeatures: image.features,
        },
        req,
      )
      if (d.records.length > 0) this.#lastHeartbeatMs.set(req.brokerId, this.#o.clock.monotonicMs())
      return d
    }, 'batched')
  }

  brokerHeartbeat(
    req: BrokerHeartbeatRequestData.BrokerHeartbeatRequest,
  ): Promise<BrokerHeartbeatResponseData.BrokerHeartbeatResponseIn> {
    return this.#write((image) => {
      const b = image.brokers.get(req.brokerId)
      if (b?.epoch === req.brokerEpoch)
        this.#reportedOffsets.set(b.id, { brokerEpoch: b.epoch, offset: req.currentMetadataOffset })
      const d = brokerHeartbeat(
        {
          image,
          committedOffset: this.#committed?.provenance.offset ?? -1n,
          lowestActiveOffset: (excluding) => this.#lowestActiveOffset(image, excluding),
          controlledShutdownOffset: (id) => {
            const c = this.#controlledShutdownOffsets.get(id)
            return c !== undefined && c.brokerEpoch === image.brokers.get(id)?.epoch ? c.offset : undefined
          },
        },
        req,
      )
      if (d.response.errorCode === ErrorCode.None)
        this.#lastHeartbeatMs.set(req.brokerId, this.#o.clock.monotonicMs())
      if (b !== undefined && req.wantShutDown && d.records.length > 0) {
        // The records are proposed right after this decision, from the log's end on; the broker
        // may stop once the others have applied the last of them.
        const last = this.#o.quorum.status().logEndOffset + BigInt(d.records.length) - 1n
        this.#controlledShutdownOffsets.set(b.id, { brokerEpoch: b.epoch, offset: last })
      }
      return d
    }, 'batched')
  }

  /**
   * The lowest metadata offset the active brokers but `excluding` (unfenced, not shutting down)
   * reported, one that has not reported in its current epoch counting as -1; null when there is no
   * other active broker.
   */
  #lowestActiveOffset(image: MetadataImage, excluding: BrokerId): bigint | null {
    let lowest: bigint | null = null
    for (const b of image.brokers.values()) {
      if (b.id === excluding || b.fenced || b.inControlledShutdown) continue
      const r = this.#reportedOffsets.get(b.id)
      const offset = r !== undefined && r.brokerEpoch === b.epoch ? r.offset : -1n
      if (lowest === null || offset < lowest) lowest = offset
    }
    return lowest
  }

  /** As Kafka's BrokerHeartbeatManager.hasValidSession: a fenced broker has no session. */
  #hasLiveSession(id: BrokerId): boolean {
    if (this.#pending?.brokers.get(id)?.fenced !== false) return false
    const last = this.#lastHeartbeatMs.get(id)
    return last !== undefined && this.#o.clock.monotonicMs() - last < this.#o.brokerSessionTimeoutMs
  }

  /**
   * Fences brokers whose session lapsed. The check runs when the earliest live session expires (as
   * Kafka's controller schedules its fence check at the next expiry), at most SESSION_CHECK_INTERVAL_MS
   * apart: a polling interval alone would add up to that much to every failover.
   */
  #scheduleSessionCheck(): void {
    if (this.#closed || this.#pending === null) return
    const now = this.#o.clock.monotonicMs()
    let delay = SESSION_CHECK_INTERVAL_MS
    for (const b of this.#pending.brokers.values()) {
      const last = this.#lastHeartbeatMs.get(b.id)
      if (b.fenced || last === undefined || this.#fencing.has(b.id)) continue
      delay = Math.min(delay, Math.max(1, last + this.#o.brokerSessionTimeoutMs - now))
    }
    this.#sessionTimer = this.#o.clock.setTimer(delay, () => {
      this.#sessionTimer = null
      const image = this.#pending
      if (image === null) return
      for (const b of image.brokers.values()) {
        if (!b.fenced && !this.#fencing.has(b.id) && !this.#hasLiveSession(b.id)) {
          this.#o.log?.(
            'warn',
            `broker ${b.id} missed its heartbeats for ${this.#o.brokerSessionTimeoutMs} ms: fencing it`,
          )
          this.#fencing.add(b.id)
          void this.#write((img) => ({ records: fenceBroker(img, b.id), response: undefined }), 'batched')
            .catch(() => {})
            .finally(() => this.#fencing.delete(b.id))
        }
      }
      this.#scheduleSessionCheck()
    })
  }

  close(): void {
    this.#closed = true
    this.#deactivate()
  }
}

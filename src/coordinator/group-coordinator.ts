/**
 * The group coordinator shell: one GroupStateMachine per `__consumer_offsets` partition this broker
 * leads, loaded from the log on election (COORDINATOR_LOAD_IN_PROGRESS until then), its timers armed
 * on the Clock, its records appended through the OffsetsLog port, its replies handed to the waiting
 * requests, and the offsets.retention sweep. It holds no group logic of its own.
 */
import type { Clock, Random, TimerHandle } from '../io/index.ts'
import { assert, type GroupId, type TopicName } from '../model/index.ts'
import {
  DecodeError,
  type DescribeGroupsResponseData,
  ErrorCode,
  type ListGroupsResponseData,
} from '../protocol/index.ts'
import { decodeRecordBatches, encodeRecordBatch } from './coordinator-records.ts'
import {
  AUTHORIZED_OPERATIONS_OMITTED,
  type CommitInput,
  type CommitResult,
  type DeleteOffsetsInput,
  type DeleteOffsetsResult,
  type Effect,
  type GroupConfig,
  GroupStateMachine,
  type HeartbeatInput,
  type JoinInput,
  type JoinResult,
  type LeaveInput,
  type LeaveResult,
  type LogLevel,
  type OffsetFetchGroupResult,
  type Reply,
  type SyncInput,
  type SyncResult,
  type TxnCommitInput,
} from './group-state-machine.ts'
import { partitionForGroup } from './java-hash.ts'
import { LoadWaiters } from './load-waiters.ts'
import type { OffsetsLog } from './offsets-log.ts'

export interface GroupCoordinatorOptions {
  readonly config: GroupConfig
  /** offsets.topic.num.partitions */
  readonly partitionCount: number
  /** offsets.retention.check.interval.ms */
  readonly retentionCheckIntervalMs: number
  readonly log: OffsetsLog
  readonly clock: Clock
  readonly random: Random
  readonly logger?: (level: LogLevel, message: string) => void
  /** Bytes asked per read while loading (Kafka's offsets.load.buffer.size). Default 5 MiB. */
  readonly loadBufferBytes?: number
  /** Wait before loading again after a failed read. Default 1000 ms. */
  readonly loadRetryBackoffMs?: number
  /**
   * Whether this broker's metadata already names it the leader of a `__consumer_offsets`
   * partition. The replica manager tells the coordinator a moment later (it opens the partition
   * first), while another broker's FindCoordinator may already send clients here: in that window
   * a group request is answered COORDINATOR_LOAD_IN_PROGRESS (retried here) rather than
   * NOT_COORDINATOR, which librdkafka's committed() does not retry. Default: never.
   */
  readonly leadsPartition?: (partition: number) => boolean
}

const LOAD_BUFFER_BYTES_DEFAULT = 5 * 1024 * 1024
const LOAD_RETRY_BACKOFF_MS_DEFAULT = 1000

/** One partition's coordinator: its state machine, its timers, and whether it is loaded. */
interface Shard {
  readonly partition: number
  readonly epoch: number
  readonly machine: GroupStateMachine
  readonly timers: Map<string, TimerHandle>
  state: 'loading' | 'active' | 'closed'
  loadRetry: TimerHandle | null
}

export type CoordinatorStatus =
  | typeof ErrorCode.None
  | typeof ErrorCode.NotCoordinator
  | typeof ErrorCode.CoordinatorLoadInProgress

export class GroupCoordinator {
  readonly partitionCount: number
  readonly #options: GroupCoordinatorOptions
  readonly #clock: Clock
  readonly #logger: (level: LogLevel, message: string) => void
  readonly #shards = new Map<number, Shard>()
  readonly #pending = new Map<number, (reply: Reply) => void>()
  #nextToken = 1
  #sweepTimer: TimerHandle | null = null
  /** Woken whenever a partition starts or ends loading here (`whenLoaded`). */
  readonly #loadWaiters: LoadWaiters
  #closed = false

  constructor(options: GroupCoordinatorOptions) {
    assert(options.partitionCount >= 1, 'offsets.topic.num.partitions must be at least 1')
    this.partitionCount = options.partitionCount
    this.#options = options
    this.#clock = options.clock
    this.#logger = options.logger ?? (() => {})
    this.#loadWaiters = new LoadWaiters(options.clock)
    this.#scheduleSweep()
  }

  /** The `__consumer_offsets` partition of a group. */
  partitionFor(groupId: string): number {
    return partitionForGroup(groupId, this.partitionCount)
  }

  /** NONE when this broker serves the group now, else NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS. */
  statusOf(groupId: GroupId): CoordinatorStatus {
    const shard = this.#shards.get(this.partitionFor(groupId))
    if (shard === undefined) return this.#notHere(this.partitionFor(groupId))
    return shard.state === 'active' ? ErrorCode.None : ErrorCode.CoordinatorLoadInProgress
  }

  /**
   * Resolves once none of `groupIds` is COORDINATOR_LOAD_IN_PROGRESS here (its partition loaded,
   * or no longer coming here), or after `timeoutMs`: a request to a coordinator that Metadata or
   * FindCoordinator already names, while it still loads the partition, waits for it rather than
   * being answered an error the client retries only after a backoff.
   */
  whenLoaded(groupIds: readonly GroupId[], timeoutMs: number): Promise<void> {
    const loading = () =>
      !this.#closed && groupIds.some((g) => this.statusOf(g) === ErrorCode.CoordinatorLoadInProgress)
    return this.#loadWaiters.wait(loading, timeoutMs)
  }

  /** Re-checks the requests waiting in `whenLoaded` (a partition's load state, or the metadata, changed). */
  wakeLoadWaiters(): void {
    this.#loadWaiters.wake()
  }

  /** Partitions loaded or loading here. */
  partitions(): { partition: number; epoch: number; state: 'loading' | 'active' }[] {
    return [...this.#shards.values()].map((s) => ({
      partition: s.partition,
      epoch: s.epoch,
      state: s.state === 'active' ? 'active' : 'loading',
    }))
  }

  /**
   * This broker became the leader of `partition` in `epoch`: load its groups and offsets from the
   * log, then serve them. Resolves once loaded (or superseded). A newer epoch replaces an older.
   */
  async onElection(partition: number, epoch: number): Promise<void> {
    assert(partition >= 0 && partition < this.partitionCount, `no __consumer_offsets partition ${partition}`)
    if (this.#closed) return
    const current = this.#shards.get(partition)
    if (current !== undefined) {
      if (current.epoch >= epoch) return
      this.#unload(current)
    }
    const shard: Shard = {
      partition,
      epoch,
      machine: this.#newMachine(partition),
      timers: new Map(),
      state: 'loading',
      loadRetry: null,
    }
    this.#shards.set(partition, shard)
    this.wakeLoadWaiters()
    await this.#load(shard)
  }

  /** This broker no longer leads `partition` (an epoch older than the loaded one is ignored). */
  onResignation(partition: number, epoch?: number): void {
    const shard = this.#shards.get(partition)
    if (shard === undefined) return
    if (epoch !== undefined && epoch < shard.epoch) return
    this.#unload(shard)
  }

  #newMachine(partition: number): GroupStateMachine {
    return new GroupStateMachine({
      config: this.#options.config,
      clock: this.#clock,
      random: this.#options.random,
      log: (level, message) => this.#logger(level, `[__consumer_offsets-${partition}] ${message}`),
    })
  }

  async #load(shard: Shard): Promise<void> {
    const started = this.#clock.monotonicMs()
    const maxBytes = this.#options.loadBufferBytes ?? LOAD_BUFFER_BYTES_DEFAULT
    let records = 0
    try {
      const bounds = this.#options.log.bounds(shard.partition)
      if (bounds === null) throw new LoadError(`partition ${shard.partition} is not hosted here`)
      let offset = bounds.logStartOffset
      while (offset < bounds.highWatermark) {
        const r = await this.#options.log.read(shard.partition, offset, maxBytes)
        if (shard.state !== 'loading') return
        if (r.errorCode !== ErrorCode.None)
          throw new LoadError(`read at offset ${offset} failed with error ${r.errorCode}`)
        const decoded = decodeRecordBatches(r.records)
        if (decoded.nextOffset === null) break
        for (const { offset: at, producerId, record } of decoded.records) {
          if (at >= bounds.highWatermark) break
          if (record.kind === 'foreign') continue
          if (record.kind === 'marker') shard.machine.replayEndTransactionMarker(producerId, record.committed)
          else shard.machine.replay(record, at, producerId)
          records++
        }
        offset = decoded.nextOffset
      }
    } catch (e) {
      if (!(e instanceof LoadError) && !(e instanceof DecodeError)) throw e
      if (shard.state !== 'loading') return
      const backoffMs = this.#options.loadRetryBackoffMs ?? LOAD_RETRY_BACKOFF_MS_DEFAULT
      this.#logger(
        'error',
        `loading __consumer_offsets-${shard.partition} failed: ${e.message}; retrying in ${backoffMs} ms`,
      )
      await new Promise<void>((resolve) => {
        shard.loadRetry = this.#clock.setTimer(backoffMs, () => {
          shard.loadRetry = null
          resolve()
        })
      })
      if (shard.state !== 'loading') return
      const retry: Shard = {
        ...shard,
        machine: this.#newMachine(shard.partition),
        timers: new Map(),
        loadRetry: null,
      }
      shard.state = 'closed'
      this.#shards.set(shard.partition, retry)
      return this.#load(retry)
    }
    if (shard.state !== 'loading') return
    shard.machine.onLoaded()
    shard.state = 'active'
    this.#drain(shard)
    this.wakeLoadWaiters()
    this.#logger(
      'info',
      `loaded __consumer_offsets-${shard.partition} (epoch ${shard.epoch}): ${shard.machine.groupCount} groups from ${records} records in ${Math.round(this.#clock.monotonicMs() - started)} ms`,
    )
  }

  #unload(shard: Shard): void {
    if (shard.state === 'closed') return
    shard.state = 'closed'
    if (shard.loadRetry !== null) this.#clock.clearTimer(shard.loadRetry)
    shard.machine.unload()
    this.#drain(shard)
    for (const handle of shard.timers.values()) this.#clock.clearTimer(handle)
    shard.timers.clear()
    if (this.#shards.get(shard.partition) === shard) this.#shards.delete(shard.partition)
    this.wakeLoadWaiters()
  }

  /** Stops: unloads every partition (waiters answered NOT_COORDINATOR) and the sweep. */
  close(): void {
    this.#closed = true
    if (this.#sweepTimer !== null) this.#clock.clearTimer(this.#sweepTimer)
    for (const shard of [...this.#shards.values()]) this.#unload(shard)
    this.wakeLoadWaiters()
  }

  // ----------------------------------------------------------------------------- effects

  #drain(shard: Shard): void {
    for (const effect of shard.machine.takeEffects()) this.#apply(shard, effect)
  }

  #apply(shard: Shard, effect: Effect): void {
    switch (effect.kind) {
      case 'reply': {
        const resolve = this.#pending.get(effect.reply.token)
        assert(resolve !== undefined, `no request waits for reply ${effect.reply.token}`)
        this.#pending.delete(effect.reply.token)
        resolve(effect.reply)
        return
      }
      case 'schedule': {
        if (shard.state === 'closed') return
        const old = shard.timers.get(effect.key)
        if (old !== undefined) this.#clock.clearTimer(old)
        shard.timers.set(
          effect.key,
          this.#clock.setTimer(effect.delayMs, () => {
            shard.timers.delete(effect.key)
            if (shard.state !== 'active') return
            shard.machine.fire(effect.key)
            this.#drain(shard)
          }),
        )
        return
      }
      case 'cancel': {
        const old = shard.timers.get(effect.key)
        if (old !== undefined) this.#clock.clearTimer(old)
        shard.timers.delete(effect.key)
        return
      }
      case 'write':
        if (shard.state === 'closed') return
        void this.#write(shard, effect.writeId, effect.records, effect.transaction)
        return
    }
  }

  async #write(
    shard: Shard,
    writeId: number,
    records: Parameters<typeof encodeRecordBatch>[0],
    transaction: Parameters<typeof encodeRecordBatch>[2],
  ): Promise<void> {
    let errorCode: ErrorCode
    let baseOffset = -1n
    try {
      const r = await this.#options.log.append(
        shard.partition,
        encodeRecordBatch(records, this.#clock.nowMs(), transaction),
        transaction?.verificationGuard,
      )
      errorCode = r.errorCode
      if (r.errorCode === ErrorCode.None) baseOffset = r.baseOffset
      else {
        this.#logger(
          'warn',
          `append to __consumer_offsets-${shard.partition} failed with error ${r.errorCode}`,
        )
      }
    } catch (e) {
      this.#logger('error', `append to __consumer_offsets-${shard.partition} failed: ${(e as Error).message}`)
      errorCode = ErrorCode.KafkaStorageError
    }
    if (shard.state === 'closed') return
    shard.machine.onWriteComplete(writeId, errorCode, baseOffset)
    this.#drain(shard)
  }

  /** Starts a request that is answered by a reply for its token. */
  #call(shard: Shard, start: (token: number) => void): Promise<Reply> {
    const token = this.#nextToken++
    const reply = new Promise<Reply>((resolve) => this.#pending.set(token, resolve))
    start(token)
    this.#drain(shard)
    return reply
  }

  /** The active shard of a group, or the error that says why there is none. */
  #shardOf(groupId: GroupId): Shard | CoordinatorStatus {
    const shard = this.#shards.get(this.partitionFor(groupId))
    if (shard === undefined) return this.#notHere(this.partitionFor(groupId))
    if (shard.state !== 'active') return ErrorCode.CoordinatorLoadInProgress
    return shard
  }

  /** No shard for `partition`: NOT_COORDINATOR, unless the metadata says it is about to be here. */
  #notHere(partition: number): CoordinatorStatus {
    return this.#options.leadsPartition?.(partition) === true
      ? ErrorCode.CoordinatorLoadInProgress
      : ErrorCode.NotCoordinator
  }

  #scheduleSweep(): void {
    if (this.#closed) return
    this.#sweepTimer = this.#clock.setTimer(this.#options.retentionCheckIntervalMs, () => {
      this.#sweepTimer = null
      this.expireOffsets()
      this.#scheduleSweep()
    })
  }

  /** Runs the offsets.retention sweep on every loaded partition now (it also runs on its timer). */
  expireOffsets(): void {
    for (const shard of this.#shards.values()) {
      if (shard.state !== 'active') continue
      shard.machine.expireOffsets()
      this.#drain(shard)
    }
  }

  // ----------------------------------------------------------------------------- the APIs

  async joinGroup(input: JoinInput): Promise<JoinResult> {
    const shard = this.#shardOf(input.groupId)
    if (typeof shard === 'number' || input.groupId === '') {
      return {
        errorCode: typeof shard === 'number' ? shard : ErrorCode.InvalidGroupId,
        generationId: -1,
        protocolType: null,
        protocolName: null,
        leader: '',
        skipAssignment: false,
        memberId: input.memberId,
        members: [],
      }
    }
    const reply = await this.#call(shard, (token) => shard.machine.joinGroup(token, input))
    assert(reply.kind === 'join', `JoinGroup answered by a ${reply.kind} reply`)
    return reply.result
  }

  async syncGroup(input: SyncInput): Promise<SyncResult> {
    const shard = this.#shardOf(input.groupId)
    if (typeof shard === 'number' || input.groupId === '') {
      const errorCode = typeof shard === 'number' ? shard : ErrorCode.InvalidGroupId
      return { errorCode, protocolType: null, protocolName: null, assignment: Buffer.alloc(0) }
    }
    const reply = await this.#call(shard, (token) => shard.machine.syncGroup(token, input))
    assert(reply.kind === 'sync', `SyncGroup answered by a ${reply.kind} reply`)
    return reply.result
  }

  heartbeat(input: HeartbeatInput): ErrorCode {
    if (input.groupId === '') return ErrorCode.InvalidGroupId
    const shard = this.#shardOf(input.groupId)
    if (typeof shard === 'number') return shard
    const errorCode = shard.machine.heartbeat(input)
    this.#drain(shard)
    return errorCode
  }

  leaveGroup(input: LeaveInput): LeaveResult {
    if (input.groupId === '') return { errorCode: ErrorCode.InvalidGroupId, members: [] }
    const shard = this.#shardOf(input.groupId)
    if (typeof shard === 'number') return { errorCode: shard, members: [] }
    const result = shard.machine.leaveGroup(input)
    this.#drain(shard)
    return result
  }

  async commitOffsets(input: CommitInput): Promise<CommitResult> {
    const shard = this.#shardOf(input.groupId)
    if (typeof shard === 'number') {
      return input.topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode: shard })),
      }))
    }
    const reply = await this.#call(shard, (token) => shard.machine.commitOffsets(token, input))
    assert(reply.kind === 'commit', `OffsetCommit answered by a ${reply.kind} reply`)
    return reply.result
  }

  /**
   * TxnOffsetCommit: the offsets are written in one transactional batch of the producer and stay
   * pending until the transaction's marker (`completeTransaction`).
   */
  async commitTransactionalOffsets(input: TxnCommitInput): Promise<CommitResult> {
    const shard = this.#shardOf(input.groupId)
    if (typeof shard === 'number') {
      return input.topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode: shard })),
      }))
    }
    const reply = await this.#call(shard, (token) => shard.machine.commitTransactionalOffsets(token, input))
    assert(reply.kind === 'txnCommit', `TxnOffsetCommit answered by a ${reply.kind} reply`)
    return reply.result
  }

  /**
   * A transaction's marker was written to `__consumer_offsets` partition `partition`: the
   * producer's pending offsets there become committed (COMMIT) or are dropped (ABORT). Resolves once
   * applied. A partition still loading applies it after the load (the load may have read the marker
   * already: applying it again finds nothing pending); one not coordinated here has nothing to
   * apply (its next load reads the marker from the log).
   */
  async completeTransaction(partition: number, producerId: bigint, committed: boolean): Promise<void> {
    for (;;) {
      const shard = this.#shards.get(partition)
      if (shard === undefined || shard.state === 'closed' || this.#closed) return
      if (shard.state === 'loading') {
        await this.#loadWaiters.wait(() => this.#shards.get(partition)?.state === 'loading' && !this.#closed)
        continue
      }
      const reply = await this.#call(shard, (token) =>
        shard.machine.completeTransaction(token, producerId, committed),
      )
      assert(reply.kind === 'txnCompleted', `a transaction marker answered by a ${reply.kind} reply`)
      return
    }
  }

  /** OffsetFetch of one group (null topics: all). A group-level error comes as `errorCode`. */
  fetchOffsets(
    groupId: GroupId,
    topics: readonly { name: TopicName; partitionIndexes: readonly number[] }[] | null,
  ): OffsetFetchGroupResult {
    const shard = groupId === '' ? ErrorCode.InvalidGroupId : this.#shardOf(groupId)
    if (typeof shard === 'number') return { groupId, errorCode: shard, topics: [] }
    return shard.machine.fetchOffsets(groupId, topics)
  }

  /**
   * OffsetFetch with `requireStable` (v7+): answered once the writes before it are done; a
   * partition with a pending transactional offset is UNSTABLE_OFFSET_COMMIT.
   */
  async fetchStableOffsets(
    groupId: GroupId,
    topics: readonly { name: TopicName; partitionIndexes: readonly number[] }[] | null,
  ): Promise<OffsetFetchGroupResult> {
    const shard = groupId === '' ? ErrorCode.InvalidGroupId : this.#shardOf(groupId)
    if (typeof shard === 'number') return { groupId, errorCode: shard, topics: [] }
    const reply = await this.#call(shard, (token) => shard.machine.fetchStableOffsets(token, groupId, topics))
    assert(reply.kind === 'fetch', `OffsetFetch answered by a ${reply.kind} reply`)
    return reply.result
  }

  async deleteOffsets(input: DeleteOffsetsInput): Promise<DeleteOffsetsResult> {
    const shard = input.groupId === '' ? ErrorCode.InvalidGroupId : this.#shardOf(input.groupId)
    if (typeof shard === 'number') return { errorCode: shard, topics: [] }
    const reply = await this.#call(shard, (token) => shard.machine.deleteOffsets(token, input))
    assert(reply.kind === 'deleteOffsets', `OffsetDelete answered by a ${reply.kind} reply`)
    return reply.result
  }

  /** DeleteGroups: each group on its own partition; answers in the order asked. */
  async deleteGroups(groupIds: readonly GroupId[]): Promise<{ groupId: GroupId; errorCode: ErrorCode }[]> {
    const byShard = new Map<Shard, GroupId[]>()
    const errors = new Map<GroupId, ErrorCode>()
    for (const groupId of groupIds) {
      const shard = groupId === '' ? ErrorCode.InvalidGroupId : this.#shardOf(groupId)
      if (typeof shard === 'number') {
        errors.set(groupId, shard)
        continue
      }
      const list = byShard.get(shard) ?? []
      list.push(groupId)
      byShard.set(shard, list)
    }
    const results = await Promise.all(
      [...byShard].map(async ([shard, ids]) => {
        const reply = await this.#call(shard, (token) => shard.machine.deleteGroups(token, ids))
        assert(reply.kind === 'deleteGroups', `DeleteGroups answered by a ${reply.kind} reply`)
        return reply.result
      }),
    )
    for (const r of results.flat()) errors.set(r.groupId, r.errorCode)
    return groupIds.map((groupId) => ({
      groupId,
      errorCode: errors.get(groupId) ?? ErrorCode.UnknownServerError,
    }))
  }

  /** DescribeGroups; `missingAsError` as `GroupStateMachine.describeGroup` takes it (v6+). */
  describeGroups(
    groupIds: readonly GroupId[],
    includeAuthorizedOperations: boolean,
    missingAsError = false,
  ): DescribeGroupsResponseData.DescribedGroupIn[] {
    return groupIds.map((groupId) => {
      const shard = this.#shardOf(groupId)
      if (typeof shard !== 'number')
        return shard.machine.describeGroup(groupId, includeAuthorizedOperations, missingAsError)
      return {
        errorCode: shard,
        groupId,
        groupState: '',
        protocolType: '',
        protocolData: '',
        members: [],
        authorizedOperations: AUTHORIZED_OPERATIONS_OMITTED,
      }
    })
  }

  /** ListGroups over every loaded partition; COORDINATOR_LOAD_IN_PROGRESS while one still loads. */
  listGroups(
    statesFilter: readonly string[],
    typesFilter: readonly string[],
  ): { errorCode: ErrorCode; groups: ListGroupsResponseData.ListedGroupIn[] } {
    let errorCode: ErrorCode = ErrorCode.None
    const groups: ListGroupsResponseData.ListedGroupIn[] = []
    for (const shard of this.#shards.values()) {
      if (shard.state !== 'active') {
        errorCode = ErrorCode.CoordinatorLoadInProgress
        continue
      }
      groups.push(...shard.machine.listGroups(statesFilter, typesFilter))
    }
    return { errorCode, groups }
  }

  /** The committed offsets of every group of the partitions loaded here. */
  *committedOffsets(): Generator<{ groupId: GroupId; topic: TopicName; partition: number; offset: bigint }> {
    for (const shard of this.#shards.values())
      if (shard.state === 'active') yield* shard.machine.committedOffsets()
  }

  /** The state machine of a loaded partition (tests, admin). */
  machineOf(partition: number): GroupStateMachine | undefined {
    const shard = this.#shards.get(partition)
    return shard?.state === 'active' ? shard.machine : undefined
  }
}

class LoadError extends Error {
  override name = 'LoadError'
}

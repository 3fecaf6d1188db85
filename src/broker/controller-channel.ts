/**
 * How a broker reaches the active controller: in-process when this node hosts it and it is active,
 * otherwise over the wire to the quorum leader's controller listener. Retries NOT_CONTROLLER and
 * lost connections with backoff until the caller's deadline.
 */
import {
  AuthenticationBackoff,
  type ClientSecurity,
  ConnectionError,
  connectionSecurity,
  isAuthenticationError,
  KafkaConnection,
} from '../client/index.ts'
import {
  INTERNAL_TOPICS,
  NotControllerError,
  PolicyViolationError,
  type QuorumController,
} from '../controller/index.ts'
import type { Clock, Transport } from '../io/index.ts'
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
  type Api,
  apis,
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
  type DescribeQuorumRequestData,
  type DescribeQuorumResponseData,
  type ElectLeadersRequestData,
  type ElectLeadersResponseData,
  ErrorCode,
  type IncrementalAlterConfigsRequestData,
  type IncrementalAlterConfigsResponseData,
  type ListPartitionReassignmentsRequestData,
  type ListPartitionReassignmentsResponseData,
  type UpdateFeaturesRequestData,
  type UpdateFeaturesResponseData,
} from '../protocol/index.ts'
import type { RaftStatus } from '../quorum/index.ts'
import type {
  AclControllerApi,
  ControllerApi,
  ControllerFailure,
  ControllerRegistrationApi,
  ReassignmentApi,
  ScramControllerApi,
} from '../server/index.ts'
import type { VoterSpec } from './node-config.ts'

/** The controller could not be reached before the deadline. */
export class ControllerUnavailableError extends Error {
  override name = 'ControllerUnavailableError'
}

export interface ControllerChannelOptions {
  readonly nodeId: BrokerId
  readonly local: QuorumController | null
  readonly status: () => RaftStatus
  readonly voters: readonly VoterSpec[]
  readonly clock: Clock
  readonly transport: Transport
  /** How the controller listener is secured (`controller.listener.names`' first); default PLAINTEXT. */
  readonly security?: ClientSecurity
  /** Where a refused authentication to the controller is reported (once per streak). */
  readonly log?: (level: 'info' | 'warn' | 'error', message: string) => void
  /** How long a call may keep retrying (`request.timeout.ms` of the forwarding). */
  readonly timeoutMs: number
}

const RETRY_BACKOFF_MS = 50

/** Every per-item result says NOT_CONTROLLER: the request reached a node that is not active. */
function allNotController(
  items: ReadonlyArray<{ readonly errorCode?: number | undefined }> | undefined,
): boolean {
  return (
    items !== undefined && items.length > 0 && items.every((t) => t.errorCode === ErrorCode.NotController)
  )
}

/** Maps a controller call's failure to the error a client sees. */
export function controllerFailure(e: unknown): ControllerFailure {
  if (e instanceof NotControllerError) return { errorCode: ErrorCode.NotController, message: e.message }
  if (e instanceof PolicyViolationError) return { errorCode: ErrorCode.PolicyViolation, message: e.message }
  if (e instanceof ControllerUnavailableError)
    return { errorCode: ErrorCode.RequestTimedOut, message: e.message }
  return { errorCode: ErrorCode.UnknownServerError, message: e instanceof Error ? e.message : String(e) }
}

export class ControllerChannel
  implements ControllerApi, ControllerRegistrationApi, ReassignmentApi, AclControllerApi, ScramControllerApi
{
  readonly #o: ControllerChannelOptions
  #conn: { id: BrokerId; c: Promise<KafkaConnection> } | null = null
  #closed = false
  /** Controllers that refused this node's credentials or TLS: not reconnected to every retry. */
  readonly #refused: AuthenticationBackoff

  constructor(options: ControllerChannelOptions) {
    this.#o = options
    this.#refused = new AuthenticationBackoff(options.clock, (level, m) =>
      options.log?.(level, `controller channel: ${m}`),
    )
  }

  async #connection(): Promise<KafkaConnection | null> {
    const leader = this.#o.status().leaderId
    if (leader === null) return null
    if (this.#conn !== null && this.#conn.id === leader) {
      const c = await this.#conn.c.catch(() => null)
      if (c !== null && !c.closed) return c
      // A closed one is gone; one retiring at the end of its SASL session closes itself once its
      // requests are answered.
      this.#conn = null
    }
    this.#dropConnection()
    const v = this.#o.voters.find((x) => x.id === leader)
    if (v === undefined) return null
    const peer = `controller ${leader} (${v.host}:${v.port})`
    this.#refused.check(peer)
    const c = KafkaConnection.open(
      { host: v.host, port: v.port },
      {
        clientId: `broker-${this.#o.nodeId}`,
        clock: this.#o.clock,
        ...connectionSecurity(this.#o.security, this.#o.transport),
        requestTimeoutMs: this.#o.timeoutMs,
        inFlightRequestsMax: 16,
        responseBytesMax: 64 * 1024 * 1024,
        connectTimeoutMs: Math.min(this.#o.timeoutMs, 5000),
      },
    )
    this.#conn = { id: leader, c }
    return c.then(
      (connection) => {
        this.#refused.succeeded(peer)
        return connection
      },
      (e: unknown) => {
        this.#refused.failed(peer, e)
        if (isAuthenticationError(e)) throw e
        return null
      },
    )
  }

  #dropConnection(): void {
    if (this.#conn !== null) void this.#conn.c.then((c) => c.close()).catch(() => {})
    this.#conn = null
  }

  /**
   * Calls the local controller when it is active, else the remote one; retries until the deadline
   * while the answer says NOT_CONTROLLER or the connection fails.
   */
  async #call<Res, ReqIn>(
    local: { readonly here: () => boolean; readonly call: () => Promise<Res> },
    api: Api<unknown, ReqIn, Res, never>,
    body: ReqIn,
    notController: (res: Res) => boolean,
    wanted?: number,
  ): Promise<Res> {
    const deadline = this.#o.clock.monotonicMs() + this.#o.timeoutMs
    for (;;) {
      if (this.#closed) throw new ControllerUnavailableError('the node is shutting down')
      if (local.here()) {
        try {
          return await local.call()
        } catch (e) {
          if (!(e instanceof NotControllerError)) throw e
        }
      } else if (this.#o.status().leaderId !== null && this.#o.status().leaderId !== this.#o.nodeId) {
        let c: KafkaConnection | null
        try {
          c = await this.#connection()
        } catch (e) {
          if (!isAuthenticationError(e)) throw e
          // The call fails now with why: retrying until the deadline would hide it.
          throw new ControllerUnavailableError(`cannot reach the controller: ${e.message}`, { cause: e })
        }
        if (c !== null) {
          // Forward at the client's version when the controller serves it, so that the answer
          // carries exactly the fields that version has (as Kafka's forwarding does).
          const theirs = c.peerVersions.get(api.apiKey)
          const version =
            wanted !== undefined &&
            theirs !== undefined &&
            wanted >= theirs.minVersion &&
            wanted <= theirs.maxVersion
              ? wanted
              : c.versionFor(api)
          if (version === undefined)
            throw new ControllerUnavailableError(`the controller does not serve ${api.name}`)
          try {
            const res = await c.request(api, version, body)
            if (!notController(res)) return res
          } catch (e) {
            if (!(e instanceof ConnectionError)) throw e
            this.#dropConnection()
          }
        }
      }
      if (this.#o.clock.monotonicMs() >= deadline) {
        throw new ControllerUnavailableError(`no active controller answered within ${this.#o.timeoutMs} ms`)
      }
      await new Promise<void>((resolve) => this.#o.clock.setTimer(RETRY_BACKOFF_MS, resolve))
    }
  }

  /**
   * A client's CreateTopics. Internal topics are refused here, as the local controller refuses them:
   * the controller listener lets brokers create them (createInternalTopics), and a client's request
   * reaches it forwarded.
   */
  async createTopics(
    req: CreateTopicsRequestData.CreateTopicsRequest,
    version?: number,
  ): Promise<CreateTopicsResponseData.CreateTopicsResponseIn> {
    const internal = req.topics.filter((t) => INTERNAL_TOPICS.has(t.name))
    const rest = req.topics.filter((t) => !INTERNAL_TOPICS.has(t.name))
    const forwarded =
      rest.length === 0 && internal.length > 0
        ? { throttleTimeMs: 0, topics: [] }
        : await this.#call(
            this.#local((c) => c.createTopics(internal.length === 0 ? req : { ...req, topics: rest })),
            apis.CreateTopics,
            internal.length === 0 ? req : { ...req, topics: rest },
            (res) => allNotController(res.topics),
            version,
          )
    if (internal.length === 0) return forwarded
    const refused = [...new Set(internal.map((t) => t.name))].map((name) => ({
      name,
      errorCode: ErrorCode.InvalidRequest,
      errorMessage: `Creation of internal topic ${name} is prohibited.`,
    }))
    return { ...forwarded, topics: [...(forwarded.topics ?? []), ...refused] }
  }

  /**
   * CreateTopics of an internal topic (`__consumer_offsets`) on behalf of this broker: a local
   * active controller allows it; a remote one is sent CreateTopics on its controller listener,
   * which lets brokers create internal topics.
   */
  createInternalTopics(
    req: CreateTopicsRequestData.CreateTopicsRequest,
  ): Promise<CreateTopicsResponseData.CreateTopicsResponseIn> {
    return this.#call(
      this.#local((c) => c.createTopics(req, undefined, { allowInternal: true })),
      apis.CreateTopics,
      req,
      (res) => allNotController(res.topics),
    )
  }

  deleteTopics(
    req: DeleteTopicsRequestData.DeleteTopicsRequest,
    version?: number,
  ): Promise<DeleteTopicsResponseData.DeleteTopicsResponseIn> {
    return this.#call(
      this.#local((c) => c.deleteTopics(req)),
      apis.DeleteTopics,
      req,
      (res) => allNotController(res.responses),
      version,
    )
  }

  updateFeatures(
    req: UpdateFeaturesRequestData.UpdateFeaturesRequest,
    version?: number,
  ): Promise<UpdateFeaturesResponseData.UpdateFeaturesResponseIn> {
    return this.#call(
      this.#local((c) => c.updateFeatures(req, version)),
      apis.UpdateFeatures,
      req,
      (res) => res.errorCode === ErrorCode.NotController,
      version,
    )
  }

  electLeaders(
    req: ElectLeadersRequestData.ElectLeadersRequest,
    version?: number,
  ): Promise<ElectLeadersResponseData.ElectLeadersResponseIn> {
    return this.#call(
      this.#local((c) => c.electLeaders(req, version)),
      apis.ElectLeaders,
      req,
      (res) => res.errorCode === ErrorCode.NotController,
      version,
    )
  }

  alterPartitionReassignments(
    req: AlterPartitionReassignmentsRequestData.AlterPartitionReassignmentsRequest,
    version?: number,
  ): Promise<AlterPartitionReassignmentsResponseData.AlterPartitionReassignmentsResponseIn> {
    return this.#call(
      this.#local((c) => c.alterPartitionReassignments(req)),
      apis.AlterPartitionReassignments,
      req,
      (res) => res.errorCode === ErrorCode.NotController,
      version,
    )
  }

  listPartitionReassignments(
    req: ListPartitionReassignmentsRequestData.ListPartitionReassignmentsRequest,
    version?: number,
  ): Promise<ListPartitionReassignmentsResponseData.ListPartitionReassignmentsResponseIn> {
    return this.#call(
      this.#local((c) => c.listPartitionReassignments(req)),
      apis.ListPartitionReassignments,
      req,
      (res) => res.errorCode === ErrorCode.NotController,
      version,
    )
  }

  createPartitions(
    req: CreatePartitionsRequestData.CreatePartitionsRequest,
    version?: number,
  ): Promise<CreatePartitionsResponseData.CreatePartitionsResponseIn> {
    return this.#call(
      this.#local((c) => c.createPartitions(req)),
      apis.CreatePartitions,
      req,
      (res) => allNotController(res.results),
      version,
    )
  }

  alterConfigs(
    req: AlterConfigsRequestData.AlterConfigsRequest,
    version?: number,
  ): Promise<AlterConfigsResponseData.AlterConfigsResponseIn> {
    return this.#call(
      this.#local((c) => c.alterConfigs(req)),
      apis.AlterConfigs,
      req,
      (res) => allNotController(res.responses),
      version,
    )
  }

  incrementalAlterConfigs(
    req: IncrementalAlterConfigsRequestData.IncrementalAlterConfigsRequest,
    version?: number,
  ): Promise<IncrementalAlterConfigsResponseData.IncrementalAlterConfigsResponseIn> {
    return this.#call(
      this.#local((c) => c.incrementalAlterConfigs(req)),
      apis.IncrementalAlterConfigs,
      req,
      (res) => allNotController(res.responses),
      version,
    )
  }

  createAcls(
    req: CreateAclsRequestData.CreateAclsRequest,
    version?: number,
  ): Promise<CreateAclsResponseData.CreateAclsResponseIn> {
    return this.#call(
      this.#local((c) => c.createAcls(req)),
      apis.CreateAcls,
      req,
      (res) => allNotController(res.results),
      version,
    )
  }

  deleteAcls(
    req: DeleteAclsRequestData.DeleteAclsRequest,
    version?: number,
  ): Promise<DeleteAclsResponseData.DeleteAclsResponseIn> {
    return this.#call(
      this.#local((c) => c.deleteAcls(req)),
      apis.DeleteAcls,
      req,
      (res) => allNotController(res.filterResults),
      version,
    )
  }

  alterUserScramCredentials(
    req: AlterUserScramCredentialsRequestData.AlterUserScramCredentialsRequest,
    version?: number,
  ): Promise<AlterUserScramCredentialsResponseData.AlterUserScramCredentialsResponseIn> {
    return this.#call(
      this.#local((c) => c.alterUserScramCredentials(req)),
      apis.AlterUserScramCredentials,
      req,
      (res) => allNotController(res.results),
      version,
    )
  }

  registerBroker(
    req: BrokerRegistrationRequestData.BrokerRegistrationRequest,
  ): Promise<BrokerRegistrationResponseData.BrokerRegistrationResponseIn> {
    return this.#call(
      this.#local((c) => c.registerBroker(req)),
      apis.BrokerRegistration,
      req,
      (res) => res.errorCode === ErrorCode.NotController,
    )
  }

  brokerHeartbeat(
    req: BrokerHeartbeatRequestData.BrokerHeartbeatRequest,
  ): Promise<BrokerHeartbeatResponseData.BrokerHeartbeatResponseIn> {
    return this.#call(
      this.#local((c) => c.brokerHeartbeat(req)),
      apis.BrokerHeartbeat,
      req,
      (res) => res.errorCode === ErrorCode.NotController,
    )
  }

  /** A block of producer ids for this broker's idempotent producers. */
  allocateProducerIds(
    req: AllocateProducerIdsRequestData.AllocateProducerIdsRequest,
  ): Promise<AllocateProducerIdsResponseData.AllocateProducerIdsResponseIn> {
    return this.#call(
      this.#local((c) => c.allocateProducerIds(req)),
      apis.AllocateProducerIds,
      req,
      (res) => res.errorCode === ErrorCode.NotController,
    )
  }

  /**
   * A partition leader's ISR change (KIP-497) at the newest version both ends have. Per-partition
   * errors are the caller's to act on; NOT_CONTROLLER (top level) is retried here.
   */
  alterPartition(
    req: AlterPartitionRequestData.AlterPartitionRequest,
  ): Promise<AlterPartitionResponseData.AlterPartitionResponseIn> {
    return this.#call(
      this.#local((c) => c.alterPartition(req)),
      apis.AlterPartition,
      req,
      (res) => res.errorCode === ErrorCode.NotController,
    )
  }

  /** The local controller, when this node hosts the active one. */
  #local<Res>(fn: (c: QuorumController) => Promise<Res>): { here: () => boolean; call: () => Promise<Res> } {
    const c = this.#o.local
    return { here: () => c?.isActive === true, call: () => fn(c!) }
  }

  /**
   * DescribeQuorum is answered by the quorum leader: `answerHere` when that is this node, else the
   * request is forwarded to the leader.
   */
  describeQuorum(
    req: DescribeQuorumRequestData.DescribeQuorumRequest,
    answerHere: () => Promise<DescribeQuorumResponseData.DescribeQuorumResponseIn>,
    version?: number,
  ): Promise<DescribeQuorumResponseData.DescribeQuorumResponseIn> {
    return this.#call(
      { here: () => this.#o.status().role === 'leader', call: answerHere },
      apis.DescribeQuorum,
      req,
      (res) => res.topics?.[0]?.partitions?.[0]?.errorCode === ErrorCode.NotLeaderOrFollower,
      version,
    )
  }

  close(): void {
    this.#closed = true
    this.#dropConnection()
  }
}

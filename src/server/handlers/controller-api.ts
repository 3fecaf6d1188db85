/**
 * What handlers ask of the controller, wherever it runs: the local QuorumController on a
 * controller listener, or a channel that forwards to the active controller on a broker.
 */
import type {
  AlterConfigsRequestData,
  AlterConfigsResponseData,
  BrokerHeartbeatRequestData,
  BrokerHeartbeatResponseData,
  BrokerRegistrationRequestData,
  BrokerRegistrationResponseData,
  CreatePartitionsRequestData,
  CreatePartitionsResponseData,
  CreateTopicsRequestData,
  CreateTopicsResponseData,
  DeleteTopicsRequestData,
  DeleteTopicsResponseData,
  ElectLeadersRequestData,
  ElectLeadersResponseData,
  ErrorCode,
  IncrementalAlterConfigsRequestData,
  IncrementalAlterConfigsResponseData,
} from '../../protocol/index.ts'

/**
 * `version` is the client's request version: a broker forwards at that version (as Kafka's
 * forwarding does), so the answer carries exactly the fields the client's version has.
 */
export interface ControllerApi {
  createTopics(
    req: CreateTopicsRequestData.CreateTopicsRequest,
    version?: number,
  ): Promise<CreateTopicsResponseData.CreateTopicsResponseIn>
  deleteTopics(
    req: DeleteTopicsRequestData.DeleteTopicsRequest,
    version?: number,
  ): Promise<DeleteTopicsResponseData.DeleteTopicsResponseIn>
  electLeaders(
    req: ElectLeadersRequestData.ElectLeadersRequest,
    version?: number,
  ): Promise<ElectLeadersResponseData.ElectLeadersResponseIn>
  createPartitions(
    req: CreatePartitionsRequestData.CreatePartitionsRequest,
    version?: number,
  ): Promise<CreatePartitionsResponseData.CreatePartitionsResponseIn>
  alterConfigs(
    req: AlterConfigsRequestData.AlterConfigsRequest,
    version?: number,
  ): Promise<AlterConfigsResponseData.AlterConfigsResponseIn>
  incrementalAlterConfigs(
    req: IncrementalAlterConfigsRequestData.IncrementalAlterConfigsRequest,
    version?: number,
  ): Promise<IncrementalAlterConfigsResponseData.IncrementalAlterConfigsResponseIn>
}

export interface ControllerRegistrationApi {
  registerBroker(
    req: BrokerRegistrationRequestData.BrokerRegistrationRequest,
  ): Promise<BrokerRegistrationResponseData.BrokerRegistrationResponseIn>
  brokerHeartbeat(
    req: BrokerHeartbeatRequestData.BrokerHeartbeatRequest,
  ): Promise<BrokerHeartbeatResponseData.BrokerHeartbeatResponseIn>
}

/** The error a failed controller call maps to: NOT_CONTROLLER or REQUEST_TIMED_OUT, with its message. */
export interface ControllerFailure {
  readonly errorCode: ErrorCode
  readonly message: string
}

/** Maps an exception from a controller call to the Kafka error a client should see. */
export type FailureOf = (e: unknown) => ControllerFailure

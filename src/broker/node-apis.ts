/**
 * The APIs each listener of a node serves, as plain lists: what a controller listener answers, what
 * a broker listener answers. The node hands its parts in; nothing here holds state.
 */
import type { ConfigLayer } from '../config/index.ts'
import { type QuorumController, topicNameProblem } from '../controller/index.ts'
import type { Clock } from '../io/index.ts'
import type { MetadataImage } from '../metadata/index.ts'
import { BrokerId, type TopicName } from '../model/index.ts'
import { apis } from '../protocol/index.ts'
import type { Quorum } from '../quorum/index.ts'
import {
  type AclView,
  type BrokerLoggersView,
  clusterDenied,
  defineHandler,
  EndpointType,
  type Handler,
  type HandlerRegistry,
  makeAllocateProducerIdsHandler,
  makeAlterConfigsHandler,
  makeAlterPartitionHandler,
  makeAlterUserScramCredentialsHandler,
  makeApiVersionsHandler,
  makeBrokerRegistrationHandlers,
  makeCreateAclsHandler,
  makeCreatePartitionsHandler,
  makeCreateTopicsHandler,
  makeDeleteAclsHandler,
  makeDeleteTopicsHandler,
  makeDescribeAclsHandler,
  makeDescribeClientQuotasHandler,
  makeDescribeClusterHandler,
  makeDescribeConfigsHandler,
  makeDescribeQuorumHandler,
  makeDescribeUserScramCredentialsHandler,
  makeElectLeadersHandler,
  makeIncrementalAlterConfigsHandler,
  makeMetadataHandler,
  makePartitionReassignmentHandlers,
  makeRaftHandlers,
  makeUpdateFeaturesHandler,
} from '../server/index.ts'
import { type ControllerChannel, controllerFailure } from './controller-channel.ts'
import type { VoterSpec } from './node-config.ts'

/** metadata.version this build writes when it bootstraps a cluster (Kafka 4.0-IV3). */
export const METADATA_VERSION = 25
export const METADATA_VERSION_MIN = 7
/**
 * The highest transaction.version served: 2 is KIP-890's (Produce v12 adds partitions implicitly,
 * EndTxn v5 bumps the epoch after every transaction). A new cluster finalizes it, as Kafka 4.0's.
 */
export const TRANSACTION_VERSION = 2

/** The features this build supports (KIP-584): ApiVersions reports them and a broker registers them. */
export const SUPPORTED_FEATURES: readonly { name: string; minVersion: number; maxVersion: number }[] = [
  { name: 'metadata.version', minVersion: METADATA_VERSION_MIN, maxVersion: METADATA_VERSION },
  { name: 'transaction.version', minVersion: 0, maxVersion: TRANSACTION_VERSION },
]

/** What a new cluster finalizes. */
export const BOOTSTRAP_FEATURES: ReadonlyMap<string, number> = new Map([
  ['metadata.version', METADATA_VERSION],
  ['transaction.version', TRANSACTION_VERSION],
])

/** What the listeners' handlers read from the node. */
export interface NodeApiParts {
  readonly clusterId: string
  readonly nodeId: BrokerId
  readonly voters: readonly VoterSpec[]
  readonly controllerListenerName: string
  readonly image: () => MetadataImage
  readonly quorum: Quorum
  readonly clock: Clock
  /** The STATIC_BROKER_CONFIG layer DescribeConfigs reports. */
  readonly staticBroker: ConfigLayer
  /** The authorizer's ACLs (`authorizer.class.name`), built from the metadata image. */
  readonly acls: AclView
  /** The node's loggers (the BROKER_LOGGER resource). */
  readonly loggers: BrokerLoggersView
}

/** What a broker listener serves beyond the shared APIs. */
export interface BrokerApiParts {
  readonly channel: ControllerChannel
  readonly autoCreateTopics: boolean
  /** The group coordinator's handlers (FindCoordinator, JoinGroup, OffsetCommit, ...). */
  readonly groups: readonly Handler[]
  /** The data path's handlers (Produce, Fetch, ListOffsets, ...). */
  readonly dataPath: readonly Handler[]
  /** Checks a change to this broker's own configs before it is sent (a new key store, KIP-226). */
  readonly validateOwnChange?: (changes: ReadonlyMap<string, string | null>) => string | null
}

/** The handlers of the controller listener, as Kafka's ControllerApis. */
export function controllerListenerApis(
  node: NodeApiParts,
  registry: HandlerRegistry,
  controller: QuorumController,
): Handler[] {
  const { nodeId } = node
  return [
    ...sharedApis(node, registry, EndpointType.Controller),
    ...makeRaftHandlers(node.quorum, node.clusterId, () => node.clock.nowMs()),
    describeQuorumHere(node),
    ...makeBrokerRegistrationHandlers(controller, controllerFailure),
    // Only brokers and controllers talk to this listener as Kafka's controller does (clients'
    // requests arrive forwarded, internal names already refused by the broker's channel): a
    // broker may create __consumer_offsets here for its group coordinator.
    makeCreateTopicsHandler(
      { createTopics: (req, v) => controller.createTopics(req, v, { allowInternal: true }) },
      controllerFailure,
    ),
    makeDeleteTopicsHandler(controller, controllerFailure, node.image),
    makeCreatePartitionsHandler(controller, controllerFailure),
    makeElectLeadersHandler(controller, controllerFailure),
    makeUpdateFeaturesHandler(controller, controllerFailure),
    ...makePartitionReassignmentHandlers(controller, controllerFailure),
    makeAllocateProducerIdsHandler(controller, controllerFailure),
    makeAlterPartitionHandler(controller, controllerFailure),
    describeConfigs(node),
    makeAlterConfigsHandler(controller, controllerFailure, { nodeId, brokerListener: false }),
    makeIncrementalAlterConfigsHandler(controller, controllerFailure, {
      nodeId,
      brokerListener: false,
      loggers: node.loggers,
    }),
    ...securityApis(node, controller),
  ]
}

function ownConfigs(node: NodeApiParts, broker: BrokerApiParts) {
  const validate = broker.validateOwnChange
  return {
    nodeId: node.nodeId,
    brokerListener: true,
    loggers: node.loggers,
    ...(validate === undefined ? {} : { validateOwnChange: validate }),
  }
}

/** The handlers of a client (broker) listener, as Kafka's KafkaApis. */
export function brokerListenerApis(
  node: NodeApiParts,
  registry: HandlerRegistry,
  broker: BrokerApiParts,
): Handler[] {
  const { nodeId } = node
  const { channel } = broker
  return [
    ...sharedApis(node, registry, EndpointType.Broker),
    makeMetadataHandler({
      clusterId: node.clusterId,
      nodeId,
      image: node.image,
      autoCreateTopics: broker.autoCreateTopics,
      topicNameProblem,
      createTopics: (names: readonly TopicName[]) => channel.createTopics(autoCreateRequest(names)),
    }),
    makeCreateTopicsHandler(channel, controllerFailure),
    makeDeleteTopicsHandler(channel, controllerFailure, node.image),
    makeCreatePartitionsHandler(channel, controllerFailure),
    makeElectLeadersHandler(channel, controllerFailure),
    makeUpdateFeaturesHandler(channel, controllerFailure),
    ...makePartitionReassignmentHandlers(channel, controllerFailure),
    describeConfigs(node),
    makeAlterConfigsHandler(channel, controllerFailure, ownConfigs(node, broker)),
    makeIncrementalAlterConfigsHandler(channel, controllerFailure, ownConfigs(node, broker)),
    ...broker.groups,
    ...broker.dataPath,
    describeQuorumForwarded(node, channel),
    ...securityApis(node, channel),
    makeDescribeClientQuotasHandler(),
  ]
}

/**
 * The ACL and SCRAM admin APIs: CreateAcls, DeleteAcls and AlterUserScramCredentials decided by
 * the active controller (`controller` is the local one or the channel to it), DescribeAcls and
 * DescribeUserScramCredentials answered from this node's image.
 */
function securityApis(
  node: NodeApiParts,
  controller: Parameters<typeof makeCreateAclsHandler>[0] &
    Parameters<typeof makeAlterUserScramCredentialsHandler>[0],
): Handler[] {
  return [
    makeCreateAclsHandler(controller, controllerFailure, node.acls),
    makeDescribeAclsHandler(node.acls),
    makeDeleteAclsHandler(controller, controllerFailure, node.acls),
    makeAlterUserScramCredentialsHandler(controller, controllerFailure),
    makeDescribeUserScramCredentialsHandler({ image: node.image }),
  ]
}

/** ApiVersions and DescribeCluster: every listener answers them. */
function sharedApis(
  node: NodeApiParts,
  registry: HandlerRegistry,
  endpointType: (typeof EndpointType)[keyof typeof EndpointType],
): Handler[] {
  return [
    makeApiVersionsHandler(registry, () => supportedFeatures(node)),
    makeDescribeClusterHandler({
      clusterId: node.clusterId,
      nodeId: node.nodeId,
      endpointType,
      image: node.image,
      controllers: () => ({
        nodes: node.voters.map((v) => ({ brokerId: v.id, host: v.host, port: v.port, rack: null })),
        activeId: BrokerId(node.quorum.status().leaderId ?? -1),
      }),
    }),
  ]
}

/** The feature ranges ApiVersions reports: what this build supports and what the cluster finalized. */
function supportedFeatures(node: NodeApiParts) {
  const image = node.image()
  const known = image.features.has('metadata.version')
  return {
    supported: SUPPORTED_FEATURES,
    // As Kafka: a feature at level 0 is not finalized, and metadata.version comes after the others.
    finalized: [...image.features]
      .filter(([, level]) => level > 0)
      .sort(([a], [b]) => Number(a === 'metadata.version') - Number(b === 'metadata.version'))
      .map(([name, level]) => ({ name, minVersionLevel: level, maxVersionLevel: level })),
    finalizedEpoch: known ? image.provenance.offset : -1n,
  }
}

/** DescribeQuorum answered from this node's own quorum state. */
function describeQuorumHere(node: NodeApiParts) {
  const wallOffset = () => node.clock.nowMs() - node.clock.monotonicMs()
  return makeDescribeQuorumHandler(node.quorum, {
    nodes: () =>
      node.voters.map((v) => ({
        id: v.id,
        listeners: [{ name: node.controllerListenerName, host: v.host, port: v.port }],
      })),
    wallClockMs: (ms: number) => ms + wallOffset(),
  })
}

/** DescribeQuorum on a broker listener: forwarded to the quorum leader, answered here when it is this node. */
function describeQuorumForwarded(node: NodeApiParts, channel: ControllerChannel): Handler {
  const local = describeQuorumHere(node)
  return defineHandler(apis.DescribeQuorum, {}, async (req, ctx) => {
    const denied = clusterDenied(ctx)
    if (denied !== null) return { errorCode: denied.errorCode, errorMessage: denied.message, topics: [] }
    try {
      return await channel.describeQuorum(req, async () => local.answer(req, ctx), ctx.apiVersion)
    } catch (e) {
      const f = controllerFailure(e)
      return { errorCode: f.errorCode, errorMessage: f.message }
    }
  })
}

function describeConfigs(node: NodeApiParts): Handler {
  return makeDescribeConfigsHandler({
    nodeId: node.nodeId,
    staticConfig: node.staticBroker,
    image: node.image,
    loggers: node.loggers,
  })
}

/** A CreateTopics for topics a Metadata request names when auto.create.topics.enable is on. */
function autoCreateRequest(names: readonly TopicName[]) {
  return {
    topics: names.map((name) => ({
      name,
      numPartitions: -1,
      replicationFactor: -1,
      assignments: [],
      configs: [],
    })),
    timeoutMs: 30_000,
    validateOnly: false,
  }
}

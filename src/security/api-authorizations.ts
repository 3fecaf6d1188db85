/**
 * What Kafka authorizes for each API (KafkaApis on brokers, ControllerApis on controllers, as read
 * in Kafka's sources of the 4.0 line), as data the handlers consume: the resource type, the
 * operation, which part of the request names the resource, the error a denial answers and how it
 * shows (the whole request, one resource, or the resource left out). And the authorized-operations
 * bitfields of Metadata, DescribeCluster, DescribeGroups and ConsumerGroupDescribe (Kafka's
 * AuthHelper.authorizedOperations). The handlers enforce these checks through
 * src/server/authorize.ts: the cluster-wide ones read their operation from this table.
 */
import { ApiKey, ErrorCode } from '../protocol/index.ts'
import { AclOperation, CLUSTER_RESOURCE_NAME, ResourceType } from './acl.ts'
import type { AuthorizationContext, StandardAuthorizer } from './authorizer.ts'

/**
 * How a denial shows: `request` (the whole request answers the error, as Kafka's
 * authorizeClusterOperation or an early return), `resource` (each denied resource answers the
 * error, the others proceed), `omit` (denied resources are left out silently, as in listings).
 */
export type OnDenied = 'request' | 'resource' | 'omit'

export interface AclCheck {
  readonly resourceType: ResourceType
  readonly operation: AclOperation
  /** The request field that names the resource (`cluster` for `kafka-cluster`). */
  readonly resource: string
  readonly onDenied: OnDenied
  readonly error: ErrorCode
  /** When the check applies, if not always. */
  readonly when?: string
  /**
   * Kafka's `||`: a check that passes in place of this one (tried first when `first` is set).
   * `byResourceType` asks `authorizeByResourceType` (the operation on any resource of the type).
   */
  readonly orElse?: AclCheck & { readonly byResourceType?: boolean }
  /** Whether `orElse` is tried before this check (CLUSTER permission covering every resource). */
  readonly first?: boolean
}

export interface ApiAuthorization {
  readonly apiKey: ApiKey
  /** Every check, in Kafka's order; an empty list: the API authorizes nothing. */
  readonly checks: readonly AclCheck[]
  readonly note?: string
}

const clusterError = ErrorCode.ClusterAuthorizationFailed
const topicError = ErrorCode.TopicAuthorizationFailed
const groupError = ErrorCode.GroupAuthorizationFailed
const txnError = ErrorCode.TransactionalIdAuthorizationFailed

function cluster(operation: AclOperation, extra: Partial<AclCheck> = {}): AclCheck {
  return {
    resourceType: ResourceType.Cluster,
    operation,
    resource: 'cluster',
    onDenied: 'request',
    error: clusterError,
    ...extra,
  }
}

function topic(operation: AclOperation, resource: string, extra: Partial<AclCheck> = {}): AclCheck {
  return {
    resourceType: ResourceType.Topic,
    operation,
    resource,
    onDenied: 'resource',
    error: topicError,
    ...extra,
  }
}

function group(operation: AclOperation, resource = 'groupId', extra: Partial<AclCheck> = {}): AclCheck {
  return {
    resourceType: ResourceType.Group,
    operation,
    resource,
    onDenied: 'request',
    error: groupError,
    ...extra,
  }
}

function transactionalId(operation: AclOperation, extra: Partial<AclCheck> = {}): AclCheck {
  const base = { resource: 'transactionalId', onDenied: 'request', error: txnError } as const
  return { resourceType: ResourceType.TransactionalId, operation, ...base, ...extra }
}

const {
  Read,
  Write,
  Create,
  Delete,
  Alter,
  Describe,
  ClusterAction,
  DescribeConfigs,
  AlterConfigs,
  IdempotentWrite,
} = AclOperation

/** A CLUSTER permission that covers every topic of the request (`orElse` tried first). */
function clusterFirst(operation: AclOperation, check: AclCheck): AclCheck {
  return {
    ...check,
    first: true,
    orElse: cluster(operation, { onDenied: check.onDenied, error: check.error }),
  }
}

function entry(apiKey: ApiKey, checks: readonly AclCheck[], note?: string): ApiAuthorization {
  return note === undefined ? { apiKey, checks } : { apiKey, checks, note }
}

/** The config resources of DescribeConfigs / AlterConfigs: BROKER and BROKER_LOGGER on CLUSTER, TOPIC, GROUP. */
function configChecks(operation: AclOperation): AclCheck[] {
  return [
    cluster(operation, {
      onDenied: 'resource',
      when: 'resource type BROKER, BROKER_LOGGER or CLIENT_METRICS',
    }),
    topic(operation, 'resourceName', { when: 'resource type TOPIC' }),
    group(operation, 'resourceName', { onDenied: 'resource', when: 'resource type GROUP' }),
  ]
}

const clusterActionApis: readonly ApiKey[] = [
  ApiKey.Vote,
  ApiKey.BeginQuorumEpoch,
  ApiKey.EndQuorumEpoch,
  ApiKey.FetchSnapshot,
  ApiKey.AlterPartition,
  ApiKey.BrokerRegistration,
  ApiKey.BrokerHeartbeat,
  ApiKey.AllocateProducerIds,
  ApiKey.ControllerRegistration,
  ApiKey.AssignReplicasToDirs,
  ApiKey.UpdateRaftVoter,
  ApiKey.Envelope,
  ApiKey.InitializeShareGroupState,
  ApiKey.ReadShareGroupState,
  ApiKey.WriteShareGroupState,
  ApiKey.DeleteShareGroupState,
  ApiKey.ReadShareGroupStateSummary,
]

const clusterAlterApis: readonly ApiKey[] = [
  ApiKey.CreateAcls,
  ApiKey.DeleteAcls,
  ApiKey.AlterReplicaLogDirs,
  ApiKey.ElectLeaders,
  ApiKey.AlterPartitionReassignments,
  ApiKey.AlterUserScramCredentials,
  ApiKey.UpdateFeatures,
  ApiKey.UnregisterBroker,
  ApiKey.AddRaftVoter,
  ApiKey.RemoveRaftVoter,
]

const clusterDescribeApis: readonly ApiKey[] = [
  ApiKey.DescribeAcls,
  ApiKey.DescribeLogDirs,
  ApiKey.ListPartitionReassignments,
  ApiKey.DescribeUserScramCredentials,
  ApiKey.DescribeQuorum,
]

const unauthorizedApis: readonly ApiKey[] = [
  ApiKey.SaslHandshake,
  ApiKey.SaslAuthenticate,
  ApiKey.ApiVersions,
  ApiKey.GetTelemetrySubscriptions,
  ApiKey.PushTelemetry,
  ApiKey.RenewDelegationToken,
  ApiKey.ExpireDelegationToken,
]

const dataApis: readonly ApiAuthorization[] = [
  entry(
    ApiKey.Produce,
    [
      transactionalId(Write, {
        when: 'the request has transactional records (denied also without a transactional id)',
      }),
      topic(Write, 'topicData.name'),
    ],
    'Kafka 4.0 checks no IDEMPOTENT_WRITE here: idempotent producers are authorized by InitProducerId',
  ),
  entry(ApiKey.Fetch, [
    cluster(ClusterAction, {
      onDenied: 'resource',
      error: topicError,
      when: 'from a follower (replica id or replica state set)',
    }),
    topic(Read, 'topics.topic', { when: 'from a consumer' }),
  ]),
  entry(ApiKey.ListOffsets, [topic(Describe, 'topics.name')]),
  entry(
    ApiKey.Metadata,
    [
      topic(Describe, 'topics.name', { when: 'named topics; with all topics asked the others are omitted' }),
      clusterFirst(Create, topic(Create, 'topics.name', { when: 'auto-creating a missing topic' })),
    ],
    'cluster authorized operations (v8-v10) need DESCRIBE on CLUSTER, else 0; topic authorized operations on request',
  ),
  entry(ApiKey.OffsetCommit, [group(Read), topic(Read, 'topics.name')]),
  entry(ApiKey.OffsetFetch, [
    group(Describe, 'groups.groupId', { onDenied: 'resource' }),
    topic(Describe, 'groups.topics.name', { when: 'named topics; with all topics the others are omitted' }),
  ]),
  entry(ApiKey.FindCoordinator, [
    group(Describe, 'coordinatorKeys', { onDenied: 'resource', when: 'key type GROUP' }),
    transactionalId(Describe, {
      resource: 'coordinatorKeys',
      onDenied: 'resource',
      when: 'key type TRANSACTION',
    }),
    cluster(ClusterAction, { when: 'key type SHARE' }),
  ]),
  entry(ApiKey.DeleteRecords, [topic(Delete, 'topics.name')]),
  entry(ApiKey.OffsetForLeaderEpoch, [clusterFirst(ClusterAction, topic(Describe, 'topics.topic'))]),
  entry(ApiKey.DescribeProducers, [topic(Read, 'topics.name')]),
]

const groupApis: readonly ApiAuthorization[] = [
  entry(ApiKey.JoinGroup, [group(Read)]),
  entry(ApiKey.Heartbeat, [group(Read)]),
  entry(ApiKey.LeaveGroup, [group(Read)]),
  entry(ApiKey.SyncGroup, [group(Read)]),
  entry(
    ApiKey.DescribeGroups,
    [group(Describe, 'groups', { onDenied: 'resource' })],
    'authorized operations on request (v3+)',
  ),
  entry(ApiKey.ListGroups, [
    {
      ...group(Describe, 'groups', { onDenied: 'omit' }),
      first: true,
      orElse: cluster(Describe, { onDenied: 'omit' }),
    },
  ]),
  entry(ApiKey.DeleteGroups, [group(Delete, 'groupsNames', { onDenied: 'resource' })]),
  entry(ApiKey.OffsetDelete, [group(Delete), topic(Read, 'topics.name')]),
  entry(ApiKey.ConsumerGroupHeartbeat, [group(Read)]),
  entry(
    ApiKey.ConsumerGroupDescribe,
    [group(Describe, 'groupIds', { onDenied: 'resource' })],
    'authorized operations on request',
  ),
  entry(ApiKey.ShareGroupHeartbeat, [group(Read)]),
  entry(
    ApiKey.ShareGroupDescribe,
    [group(Describe, 'groupIds', { onDenied: 'resource' })],
    'authorized operations on request',
  ),
  entry(ApiKey.ShareFetch, [group(Read), topic(Read, 'topics.topicId')]),
  entry(ApiKey.ShareAcknowledge, [group(Read), topic(Read, 'topics.topicId')]),
]

const transactionApis: readonly ApiAuthorization[] = [
  entry(ApiKey.InitProducerId, [
    transactionalId(Write, { when: 'a transactional id is set' }),
    {
      ...cluster(IdempotentWrite, { when: 'no transactional id' }),
      orElse: {
        ...topic(Write, '(any topic)', { onDenied: 'request', error: clusterError }),
        byResourceType: true,
      },
    },
  ]),
  entry(ApiKey.AddPartitionsToTxn, [
    cluster(ClusterAction, { when: 'v4+ (from brokers)' }),
    transactionalId(Write, { when: 'v0-v3' }),
    topic(Write, 'topics.name', { when: 'v0-v3; the other partitions answer OPERATION_NOT_ATTEMPTED' }),
  ]),
  entry(ApiKey.AddOffsetsToTxn, [transactionalId(Write), group(Read)]),
  entry(ApiKey.EndTxn, [transactionalId(Write)]),
  entry(ApiKey.WriteTxnMarkers, [{ ...cluster(Alter), orElse: cluster(ClusterAction) }]),
  entry(ApiKey.TxnOffsetCommit, [transactionalId(Write), group(Read), topic(Read, 'topics.name')]),
  entry(ApiKey.DescribeTransactions, [
    transactionalId(Describe, { resource: 'transactionalIds', onDenied: 'resource' }),
    topic(Describe, 'topics of each transaction', { onDenied: 'omit' }),
  ]),
  entry(ApiKey.ListTransactions, [
    transactionalId(Describe, { resource: 'each transaction', onDenied: 'omit' }),
  ]),
]

const adminApis: readonly ApiAuthorization[] = [
  entry(
    ApiKey.CreateTopics,
    [
      clusterFirst(Create, topic(Create, 'topics.name')),
      topic(DescribeConfigs, 'topics.name', {
        when: 'the configs in the response; denied: topicConfigErrorCode',
      }),
    ],
    'decided by the controller (forwarded in an Envelope)',
  ),
  entry(
    ApiKey.DeleteTopics,
    [
      clusterFirst(
        Delete,
        topic(Describe, 'topics.topicId', { when: 'named by topic id; denied: no name in the response' }),
      ),
      clusterFirst(Delete, topic(Delete, 'topics.name')),
    ],
    'decided by the controller (forwarded in an Envelope); DELETE on CLUSTER covers both checks',
  ),
  entry(ApiKey.CreatePartitions, [topic(Alter, 'topics.name')]),
  entry(ApiKey.DescribeConfigs, configChecks(DescribeConfigs)),
  entry(ApiKey.AlterConfigs, configChecks(AlterConfigs)),
  entry(ApiKey.IncrementalAlterConfigs, configChecks(AlterConfigs)),
  entry(ApiKey.DescribeClientQuotas, [cluster(DescribeConfigs)]),
  entry(ApiKey.AlterClientQuotas, [cluster(AlterConfigs)]),
  entry(ApiKey.ListClientMetricsResources, [cluster(DescribeConfigs)]),
  entry(ApiKey.DescribeTopicPartitions, [
    topic(Describe, 'topics.name', { when: 'named topics; others omitted' }),
  ]),
  entry(
    ApiKey.DescribeCluster,
    [cluster(Alter, { when: 'on a controller listener' })],
    'on brokers nothing is checked; cluster authorized operations need DESCRIBE on CLUSTER, else 0',
  ),
  entry(ApiKey.CreateDelegationToken, [
    {
      resourceType: ResourceType.User,
      operation: AclOperation.CreateTokens,
      resource: 'ownerPrincipalName',
      onDenied: 'request',
      error: ErrorCode.DelegationTokenAuthorizationFailed,
      when: 'the owner is not the requester',
    },
  ]),
  entry(ApiKey.DescribeDelegationToken, [
    {
      resourceType: ResourceType.DelegationToken,
      operation: Describe,
      resource: 'token id',
      onDenied: 'omit',
      error: ErrorCode.DelegationTokenAuthorizationFailed,
      orElse: {
        resourceType: ResourceType.User,
        operation: AclOperation.DescribeTokens,
        resource: 'token owner',
        onDenied: 'omit',
        error: ErrorCode.DelegationTokenAuthorizationFailed,
      },
    },
  ]),
]

function clusterEntries(keys: readonly ApiKey[], operation: AclOperation): ApiAuthorization[] {
  return keys.map((apiKey) => entry(apiKey, [cluster(operation)]))
}

/** Every API's checks, by api key. */
export const API_AUTHORIZATIONS: ReadonlyMap<ApiKey, ApiAuthorization> = new Map(
  [
    ...dataApis,
    ...groupApis,
    ...transactionApis,
    ...adminApis,
    ...clusterEntries(clusterActionApis, ClusterAction),
    ...clusterEntries(clusterAlterApis, Alter),
    ...clusterEntries(clusterDescribeApis, Describe),
    ...unauthorizedApis.map((apiKey) => entry(apiKey, [])),
  ].map((authorization) => [authorization.apiKey, authorization]),
)

/** The error Kafka answers when an operation on a resource of this type is denied (AclEntry.authorizationError). */
export function authorizationError(type: ResourceType): ErrorCode {
  switch (type) {
    case ResourceType.Topic:
      return topicError
    case ResourceType.Group:
      return groupError
    case ResourceType.Cluster:
      return clusterError
    case ResourceType.TransactionalId:
      return txnError
    case ResourceType.DelegationToken:
      return ErrorCode.DelegationTokenAuthorizationFailed
    default:
      return ErrorCode.UnknownServerError
  }
}

/** The operations each resource type supports (AclEntry.supportedOperations): what authorized operations report. */
export const SUPPORTED_OPERATIONS: ReadonlyMap<ResourceType, readonly AclOperation[]> = new Map<
  ResourceType,
  readonly AclOperation[]
>([
  [ResourceType.Topic, [Read, Write, Create, Describe, Delete, Alter, DescribeConfigs, AlterConfigs]],
  [ResourceType.Group, [Read, Describe, Delete, DescribeConfigs, AlterConfigs]],
  [
    ResourceType.Cluster,
    [Create, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, Alter, Describe],
  ],
  [ResourceType.TransactionalId, [Describe, Write]],
  [ResourceType.DelegationToken, [Describe]],
  [ResourceType.User, [AclOperation.CreateTokens, AclOperation.DescribeTokens]],
])

/** The value of an authorized-operations field the request did not ask for (the schemas' default, Integer.MIN_VALUE). */
export const AUTHORIZED_OPERATIONS_OMITTED = -2147483648

/** Kafka's Utils.to32BitField: bit `code` set for each operation. */
export function to32BitField(operations: Iterable<AclOperation>): number {
  let field = 0
  for (const operation of operations) field |= 1 << operation
  return field
}

/** The operations of an authorized-operations field (Kafka's Utils.from32BitField). */
export function from32BitField(field: number): AclOperation[] {
  return Object.values(AclOperation).filter((operation) => (field & (1 << operation)) !== 0)
}

/**
 * The authorized operations of one resource (Kafka's AuthHelper.authorizedOperations): the
 * supported operations the principal may do, as a bitfield. Without an authorizer: all supported.
 */
export function authorizedOperations(
  authorizer: StandardAuthorizer | null,
  context: AuthorizationContext,
  resourceType: ResourceType,
  resourceName: string,
): number {
  const supported = SUPPORTED_OPERATIONS.get(resourceType) ?? []
  if (authorizer === null) return to32BitField(supported)
  const allowed = supported.filter(
    (operation) => authorizer.authorize(context, { operation, resourceType, resourceName }) === 'ALLOWED',
  )
  return to32BitField(allowed)
}

/**
 * The cluster authorized operations of Metadata (v8-v10) and DescribeCluster: 0 without DESCRIBE on
 * the cluster, else the cluster's authorized operations.
 */
export function clusterAuthorizedOperations(
  authorizer: StandardAuthorizer | null,
  context: AuthorizationContext,
): number {
  const describe = {
    operation: Describe,
    resourceType: ResourceType.Cluster,
    resourceName: CLUSTER_RESOURCE_NAME,
  }
  if (authorizer !== null && authorizer.authorize(context, describe) !== 'ALLOWED') return 0
  return authorizedOperations(authorizer, context, ResourceType.Cluster, CLUSTER_RESOURCE_NAME)
}

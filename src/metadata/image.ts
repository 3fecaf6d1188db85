/**
 * The MetadataImage: an immutable view of the cluster built from `__cluster_metadata` records.
 * Brokers serve Metadata from it; the controller decides from it. Never mutated after creation.
 */
import { type BrokerId, NO_NODE, type TopicName, type Uuid } from '../model/index.ts'

/** Kafka's "no leader" (-1). */
export const NO_LEADER: BrokerId = NO_NODE

/** A partition as the metadata log describes it (Kafka's PartitionRegistration). */
export interface PartitionRegistration {
  readonly replicas: readonly BrokerId[]
  readonly isr: readonly BrokerId[]
  readonly removingReplicas: readonly BrokerId[]
  readonly addingReplicas: readonly BrokerId[]
  /** KIP-966 eligible leader replicas; empty when unused. */
  readonly elr: readonly BrokerId[]
  readonly lastKnownElr: readonly BrokerId[]
  readonly directories: readonly Uuid[]
  /** The leader, or NO_LEADER. */
  readonly leader: BrokerId
  /** 0 recovered, 1 recovering (after an unclean election). */
  readonly leaderRecoveryState: number
  /** Bumped each time the leader changes. */
  readonly leaderEpoch: number
  /** Bumped on every change to this partition. */
  readonly partitionEpoch: number
}

export interface TopicImage {
  readonly name: TopicName
  readonly id: Uuid
  readonly partitions: ReadonlyMap<number, PartitionRegistration>
}

export interface Endpoint {
  /** The listener name, e.g. PLAINTEXT. */
  readonly name: string
  readonly host: string
  readonly port: number
  readonly securityProtocol: number
}

export interface FeatureRange {
  readonly name: string
  readonly minSupportedVersion: number
  readonly maxSupportedVersion: number
}

export interface BrokerRegistration {
  readonly id: BrokerId
  /** The broker epoch: the offset of its registration record; heartbeats must carry it. */
  readonly epoch: bigint
  readonly incarnationId: Uuid
  readonly endpoints: readonly Endpoint[]
  readonly features: readonly FeatureRange[]
  readonly rack: string | null
  readonly fenced: boolean
  readonly inControlledShutdown: boolean
  readonly logDirs: readonly Uuid[]
}

export interface ControllerRegistration {
  readonly id: BrokerId
  readonly incarnationId: Uuid
  readonly endpoints: readonly Endpoint[]
  readonly features: readonly FeatureRange[]
}

/** Kafka's ConfigResource types as they appear in ConfigRecord. */
export const ConfigResourceType = {
  Topic: 2,
  Broker: 4,
  BrokerLogger: 8,
  ClientMetrics: 16,
  Group: 32,
} as const

/** The offset and epoch of the last record an image includes. */
export interface Provenance {
  readonly offset: bigint
  readonly epoch: number
}

export interface MetadataImage {
  readonly provenance: Provenance
  /** Finalized feature levels (metadata.version, kraft.version, ...). */
  readonly features: ReadonlyMap<string, number>
  readonly brokers: ReadonlyMap<BrokerId, BrokerRegistration>
  readonly controllers: ReadonlyMap<BrokerId, ControllerRegistration>
  readonly topicsByName: ReadonlyMap<TopicName, TopicImage>
  readonly topicsById: ReadonlyMap<Uuid, TopicImage>
  /** Dynamic configs by resource (`configKey(type, name)`), each a map of key to value. */
  readonly configs: ReadonlyMap<string, ReadonlyMap<string, string>>
  /** The first producer id not yet handed out (ProducerIdsRecord). */
  readonly nextProducerId: bigint
  /** ACLs by id, as their AccessControlEntryRecords hold them. */
  readonly acls: ReadonlyMap<Uuid, AclEntry>
  /** SCRAM credentials by mechanism type (`SCRAM_MECHANISM_TYPES`), then user name (UserScramCredentialRecord). */
  readonly scramCredentials: ReadonlyMap<number, ReadonlyMap<string, ScramCredentialData>>
}

/**
 * One ACL as its AccessControlEntryRecord holds it: the wire codes of Kafka's enums (`aclFromRecord`
 * of the security module reads it as a StandardAcl).
 */
export interface AclEntry {
  readonly id: Uuid
  readonly resourceType: number
  readonly resourceName: string
  readonly patternType: number
  readonly principal: string
  readonly host: string
  readonly operation: number
  readonly permissionType: number
}

/** What a UserScramCredentialRecord keeps of one user's credential for one mechanism: never a password. */
export interface ScramCredentialData {
  readonly salt: Buffer
  readonly storedKey: Buffer
  readonly serverKey: Buffer
  readonly iterations: number
}

/** The mechanism types of UserScramCredentialRecord (Kafka's ScramMechanism.type()). */
export const SCRAM_MECHANISM_TYPES = { 'SCRAM-SHA-256': 1, 'SCRAM-SHA-512': 2 } as const

export type ScramMechanismName = keyof typeof SCRAM_MECHANISM_TYPES

/** A user's credential for a mechanism (by name or type), or undefined: what SCRAM authentication looks up. */
export function scramCredential(
  image: MetadataImage,
  mechanism: ScramMechanismName | number,
  user: string,
): ScramCredentialData | undefined {
  const type = typeof mechanism === 'number' ? mechanism : SCRAM_MECHANISM_TYPES[mechanism]
  return image.scramCredentials.get(type)?.get(user)
}

export function configKey(resourceType: number, resourceName: string): string {
  return `${resourceType}:${resourceName}`
}

export const EMPTY_IMAGE: MetadataImage = {
  provenance: { offset: -1n, epoch: -1 },
  features: new Map(),
  brokers: new Map(),
  controllers: new Map(),
  topicsByName: new Map(),
  topicsById: new Map(),
  configs: new Map(),
  nextProducerId: 0n,
  acls: new Map(),
  scramCredentials: new Map(),
}

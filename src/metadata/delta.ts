/**
 * Applies metadata records to an image: a `MetadataDelta` replays records onto copy-on-write
 * copies of what they touch, then `apply()` yields the next immutable image and what changed.
 * Pure: no I/O, no clock. A record inconsistent with the image is a `MetadataError`.
 */
import { BrokerId, type TopicName, type Uuid } from '../model/index.ts'
import type {
  AccessControlEntryRecordData,
  BrokerRegistrationChangeRecordData,
  ConfigRecordData,
  DecodedMetadataRecord,
  FeatureLevelRecordData,
  FenceBrokerRecordData,
  PartitionChangeRecordData,
  PartitionRecordData,
  ProducerIdsRecordData,
  RegisterBrokerRecordData,
  RegisterControllerRecordData,
  RemoveAccessControlEntryRecordData,
  RemoveTopicRecordData,
  RemoveUserScramCredentialRecordData,
  TopicRecordData,
  UnfenceBrokerRecordData,
  UnregisterBrokerRecordData,
  UserScramCredentialRecordData,
} from '../protocol/index.ts'
import { metadataRecordTypes } from '../protocol/index.ts'
import {
  type AclEntry,
  type BrokerRegistration,
  type ControllerRegistration,
  configKey,
  type Endpoint,
  type FeatureRange,
  type MetadataImage,
  type PartitionRegistration,
  type Provenance,
  type ScramCredentialData,
  type TopicImage,
} from './image.ts'

/** A record that contradicts the image (an unknown topic id, a stale broker epoch). */
export class MetadataError extends Error {
  override name = 'MetadataError'
}

/** PartitionChangeRecord's "leader unchanged". */
const NO_LEADER_CHANGE = -2
/** BrokerRegistrationChangeRecord.fenced values (Kafka's BrokerRegistrationFencingChange). */
const FENCE = 1
const UNFENCE = -1

/** A registration record's endpoint, without its tagged-field bookkeeping. */
function endpointOf(e: { name: string; host: string; port: number; securityProtocol: number }): Endpoint {
  return { name: e.name, host: e.host, port: e.port, securityProtocol: e.securityProtocol }
}

function featureOf(f: {
  name: string
  minSupportedVersion: number
  maxSupportedVersion: number
}): FeatureRange {
  return {
    name: f.name,
    minSupportedVersion: f.minSupportedVersion,
    maxSupportedVersion: f.maxSupportedVersion,
  }
}

/** What one applied delta changed, for the components that reconcile to it. */
export interface MetadataChanges {
  /** Topics created in this delta. */
  readonly createdTopics: readonly TopicImage[]
  /** Topics removed in this delta, as they were before removal. */
  readonly deletedTopics: readonly TopicImage[]
  /** Partitions added or changed (topic as it is in the new image). */
  readonly changedPartitions: ReadonlyArray<{ readonly topic: TopicImage; readonly partition: number }>
  readonly changedBrokers: readonly BrokerId[]
  readonly changedConfigs: readonly string[]
  /** ACLs added or removed in this delta, by id (the image says which). */
  readonly changedAcls: readonly Uuid[]
}

interface MutableTopic {
  readonly name: TopicName
  readonly id: Uuid
  partitions: Map<number, PartitionRegistration>
}

export class MetadataDelta {
  readonly #base: MetadataImage
  #features: Map<string, number> | null = null
  #brokers: Map<BrokerId, BrokerRegistration> | null = null
  #controllers: Map<BrokerId, ControllerRegistration> | null = null
  #configs: Map<string, Map<string, string>> | null = null
  #nextProducerId: bigint
  #acls: Map<Uuid, AclEntry> | null = null
  #scramCredentials: Map<number, ReadonlyMap<string, ScramCredentialData>> | null = null
  /** The mechanisms whose users this delta copied. */
  readonly #scramCopied = new Map<number, Map<string, ScramCredentialData>>()
  readonly #changedAcls = new Set<Uuid>()
  /** Topics touched in this delta by id; null marks a removal. */
  readonly #topics = new Map<Uuid, MutableTopic | null>()
  readonly #created = new Set<Uuid>()
  readonly #changedPartitions = new Map<Uuid, Set<number>>()
  readonly #changedBrokers = new Set<BrokerId>()
  readonly #changedConfigs = new Set<string>()
  #provenance: Provenance

  constructor(base: MetadataImage) {
    this.#base = base
    this.#nextProducerId = base.nextProducerId
    this.#provenance = base.provenance
  }

  /** Replays one record committed at `provenance`. */
  replay(record: DecodedMetadataRecord, provenance?: Provenance): void {
    const t = metadataRecordTypes
    const data = record.data
    switch (record.type.apiKey) {
      case t.Topic.apiKey:
        this.#topic(data as TopicRecordData.TopicRecord)
        break
      case t.Partition.apiKey:
        this.#partition(data as PartitionRecordData.PartitionRecord)
        break
      case t.PartitionChange.apiKey:
        this.#partitionChange(data as PartitionChangeRecordData.PartitionChangeRecord)
        break
      case t.RemoveTopic.apiKey:
        this.#removeTopic(data as RemoveTopicRecordData.RemoveTopicRecord)
        break
      case t.RegisterBroker.apiKey:
        this.#registerBroker(data as RegisterBrokerRecordData.RegisterBrokerRecord)
        break
      case t.UnregisterBroker.apiKey: {
        const r = data as UnregisterBrokerRecordData.UnregisterBrokerRecord
        this.#brokerAt(r.brokerId, r.brokerEpoch)
        this.#brokersW().delete(r.brokerId)
        this.#changedBrokers.add(r.brokerId)
        break
      }
      case t.FenceBroker.apiKey: {
        const r = data as FenceBrokerRecordData.FenceBrokerRecord
        this.#updateBroker(r.id, r.epoch, { fenced: true })
        break
      }
      case t.UnfenceBroker.apiKey: {
        const r = data as UnfenceBrokerRecordData.UnfenceBrokerRecord
        this.#updateBroker(r.id, r.epoch, { fenced: false })
        break
      }
      case t.BrokerRegistrationChange.apiKey:
        this.#brokerChange(data as BrokerRegistrationChangeRecordData.BrokerRegistrationChangeRecord)
        break
      case t.RegisterController.apiKey:
        this.#registerController(data as RegisterControllerRecordData.RegisterControllerRecord)
        break
      case t.Config.apiKey:
        this.#config(data as ConfigRecordData.ConfigRecord)
        break
      case t.FeatureLevel.apiKey: {
        const r = data as FeatureLevelRecordData.FeatureLevelRecord
        this.#features ??= new Map(this.#base.features)
        // KIP-584: level 0 removes the feature.
        if (r.featureLevel === 0) this.#features.delete(r.name)
        else this.#features.set(r.name, r.featureLevel)
        break
      }
      case t.ProducerIds.apiKey: {
        const r = data as ProducerIdsRecordData.ProducerIdsRecord
        if (r.nextProducerId < this.#nextProducerId) {
          throw new MetadataError(
            `producer ids move backwards: ${r.nextProducerId} < ${this.#nextProducerId}`,
          )
        }
        this.#nextProducerId = r.nextProducerId
        break
      }
      case t.AccessControlEntry.apiKey:
        this.#addAcl(data as AccessControlEntryRecordData.AccessControlEntryRecord)
        break
      case t.RemoveAccessControlEntry.apiKey:
        this.#removeAcl(data as RemoveAccessControlEntryRecordData.RemoveAccessControlEntryRecord)
        break
      case t.UserScramCredential.apiKey: {
        const r = data as UserScramCredentialRecordData.UserScramCredentialRecord
        const { salt, storedKey, serverKey, iterations } = r
        this.#scramUsersW(r.mechanism).set(r.name, { salt, storedKey, serverKey, iterations })
        break
      }
      case t.RemoveUserScramCredential.apiKey: {
        // As Kafka's ScramDelta: removing a credential that is not there changes nothing.
        const r = data as RemoveUserScramCredentialRecordData.RemoveUserScramCredentialRecord
        this.#scramUsersW(r.mechanism).delete(r.name)
        break
      }
      case t.NoOp.apiKey:
        break
      default:
        // Records this version does not act on (quotas, delegation tokens, transactions markers of
        // KIP-868, ZK migration) leave the image as it is.
        break
    }
    if (provenance !== undefined) this.#provenance = provenance
  }

  #aclsW(): Map<Uuid, AclEntry> {
    this.#acls ??= new Map(this.#base.acls)
    return this.#acls
  }

  /** An ACL id twice is a contradiction, as in Kafka's AclsDelta. */
  #addAcl(r: AccessControlEntryRecordData.AccessControlEntryRecord): void {
    const acls = this.#aclsW()
    if (acls.has(r.id)) throw new MetadataError(`an ACL with id ${r.id} exists already`)
    const { id, resourceType, resourceName, patternType, principal, host, operation, permissionType } = r
    acls.set(id, { id, resourceType, resourceName, patternType, principal, host, operation, permissionType })
    this.#changedAcls.add(id)
  }

  #removeAcl(r: RemoveAccessControlEntryRecordData.RemoveAccessControlEntryRecord): void {
    const acls = this.#aclsW()
    if (!acls.delete(r.id)) throw new MetadataError(`no ACL with id ${r.id} to remove`)
    this.#changedAcls.add(r.id)
  }

  /** The users of one SCRAM mechanism, copied for writing once per delta. */
  #scramUsersW(mechanism: number): Map<string, ScramCredentialData> {
    this.#scramCredentials ??= new Map(this.#base.scramCredentials)
    let users = this.#scramCopied.get(mechanism)
    if (users === undefined) {
      users = new Map(this.#base.scramCredentials.get(mechanism) ?? [])
      this.#scramCopied.set(mechanism, users)
      this.#scramCredentials.set(mechanism, users)
    }
    return users
  }

  #topicForWrite(id: Uuid): MutableTopic {
    const touched = this.#topics.get(id)
    if (touched === null) throw new MetadataError(`topic ${id} was removed`)
    if (touched !== undefined) return touched
    const base = this.#base.topicsById.get(id)
    if (base === undefined) throw new MetadataError(`unknown topic id ${id}`)
    const copy: MutableTopic = { name: base.name, id: base.id, partitions: new Map(base.partitions) }
    this.#topics.set(id, copy)
    return copy
  }

  #topicExists(name: TopicName): boolean {
    for (const t of this.#topics.values()) if (t !== null && t.name === name) return true
    const base = this.#base.topicsByName.get(name)
    return base !== undefined && this.#topics.get(base.id) !== null
  }

  #topic(r: TopicRecordData.TopicRecord): void {
    if (this.#topics.get(r.topicId) || this.#base.topicsById.has(r.topicId)) {
      throw new MetadataError(`topic id ${r.topicId} exists already`)
    }
    if (this.#topicExists(r.name)) throw new MetadataError(`topic ${r.name} exists already`)
    this.#topics.set(r.topicId, { name: r.name, id: r.topicId, partitions: new Map() })
    this.#created.add(r.topicId)
  }

  #changed(id: Uuid, partition: number): void {
    let set = this.#changedPartitions.get(id)
    if (set === undefined) {
      set = new Set()
      this.#changedPartitions.set(id, set)
    }
    set.add(partition)
  }

  #partition(r: PartitionRecordData.PartitionRecord): void {
    const topic = this.#topicForWrite(r.topicId)
    if (r.partitionId < 0) throw new MetadataError(`partition id ${r.partitionId}`)
    topic.partitions.set(r.partitionId, {
      replicas: r.replicas,
      isr: r.isr as BrokerId[],
      removingReplicas: r.removingReplicas,
      addingReplicas: r.addingReplicas,
      elr: r.eligibleLeaderReplicas ?? [],
      lastKnownElr: r.lastKnownElr ?? [],
      directories: r.directories,
      leader: r.leader,
      leaderRecoveryState: r.leaderRecoveryState,
      leaderEpoch: r.leaderEpoch,
      partitionEpoch: r.partitionEpoch,
    })
    this.#changed(r.topicId, r.partitionId)
  }

  #partitionChange(r: PartitionChangeRecordData.PartitionChangeRecord): void {
    const topic = this.#topicForWrite(r.topicId)
    const p = topic.partitions.get(r.partitionId)
    if (p === undefined) throw new MetadataError(`unknown partition ${topic.name}-${r.partitionId}`)
    const leaderChanged = r.leader !== NO_LEADER_CHANGE
    topic.partitions.set(r.partitionId, {
      replicas: r.replicas ?? p.replicas,
      isr: r.isr ?? p.isr,
      removingReplicas: r.removingReplicas ?? p.removingReplicas,
      addingReplicas: r.addingReplicas ?? p.addingReplicas,
      elr: r.eligibleLeaderReplicas ?? p.elr,
      lastKnownElr: r.lastKnownElr ?? p.lastKnownElr,
      directories: r.directories ?? p.directories,
      leader: leaderChanged ? r.leader : p.leader,
      leaderRecoveryState: r.leaderRecoveryState === -1 ? p.leaderRecoveryState : r.leaderRecoveryState,
      // The leader epoch moves with every leader record, even one naming the same leader.
      leaderEpoch: leaderChanged ? p.leaderEpoch + 1 : p.leaderEpoch,
      partitionEpoch: p.partitionEpoch + 1,
    })
    this.#changed(r.topicId, r.partitionId)
  }

  #removeTopic(r: RemoveTopicRecordData.RemoveTopicRecord): void {
    const touched = this.#topics.get(r.topicId)
    if (touched === null || (touched === undefined && !this.#base.topicsById.has(r.topicId))) {
      throw new MetadataError(`unknown topic id ${r.topicId}`)
    }
    if (this.#created.delete(r.topicId)) this.#topics.delete(r.topicId)
    else this.#topics.set(r.topicId, null)
    this.#changedPartitions.delete(r.topicId)
    const name = touched?.name ?? this.#base.topicsById.get(r.topicId)!.name
    const key = configKey(2, name)
    if (this.#base.configs.has(key) || this.#configs?.has(key)) {
      this.#configsW().delete(key)
      this.#changedConfigs.add(key)
    }
  }

  #brokersW(): Map<BrokerId, BrokerRegistration> {
    this.#brokers ??= new Map(this.#base.brokers)
    return this.#brokers
  }

  #configsW(): Map<string, Map<string, string>> {
    this.#configs ??= new Map(this.#base.configs as Map<string, Map<string, string>>)
    return this.#configs
  }

  #brokerAt(id: BrokerId, epoch: bigint): BrokerRegistration {
    const b = (this.#brokers ?? this.#base.brokers).get(id)
    if (b === undefined) throw new MetadataError(`unknown broker ${id}`)
    if (b.epoch !== epoch)
      throw new MetadataError(`broker ${id} epoch ${epoch} is not its current ${b.epoch}`)
    return b
  }

  #updateBroker(id: BrokerId, epoch: bigint, change: Partial<BrokerRegistration>): void {
    const b = this.#brokerAt(id, epoch)
    this.#brokersW().set(id, { ...b, ...change })
    this.#changedBrokers.add(id)
  }

  #registerBroker(r: RegisterBrokerRecordData.RegisterBrokerRecord): void {
    this.#brokersW().set(r.brokerId, {
      id: r.brokerId,
      epoch: r.brokerEpoch,
      incarnationId: r.incarnationId,
      endpoints: r.endPoints.map(endpointOf),
      features: r.features.map(featureOf),
      rack: r.rack,
      fenced: r.fenced,
      inControlledShutdown: r.inControlledShutdown,
      logDirs: r.logDirs,
    })
    this.#changedBrokers.add(r.brokerId)
  }

  #brokerChange(r: BrokerRegistrationChangeRecordData.BrokerRegistrationChangeRecord): void {
    const b = this.#brokerAt(r.brokerId, r.brokerEpoch)
    let fenced = b.fenced
    if (r.fenced === FENCE) fenced = true
    else if (r.fenced === UNFENCE) fenced = false
    else if (r.fenced !== 0) throw new MetadataError(`fencing change ${r.fenced}`)
    const inControlledShutdown = r.inControlledShutdown === 1 ? true : b.inControlledShutdown
    this.#brokersW().set(r.brokerId, {
      ...b,
      fenced,
      inControlledShutdown,
      logDirs: r.logDirs.length > 0 ? r.logDirs : b.logDirs,
    })
    this.#changedBrokers.add(r.brokerId)
  }

  #registerController(r: RegisterControllerRecordData.RegisterControllerRecord): void {
    this.#controllers ??= new Map(this.#base.controllers)
    const id = BrokerId(r.controllerId)
    this.#controllers.set(id, {
      id,
      incarnationId: r.incarnationId,
      endpoints: r.endPoints.map(endpointOf),
      features: r.features.map(featureOf),
    })
  }

  #config(r: ConfigRecordData.ConfigRecord): void {
    const key = configKey(r.resourceType, r.resourceName)
    const configs = this.#configsW()
    const current = new Map(configs.get(key) ?? [])
    if (r.value === null) current.delete(r.name)
    else current.set(r.name, r.value)
    if (current.size === 0) configs.delete(key)
    else configs.set(key, current)
    this.#changedConfigs.add(key)
  }

  /** The next image, and what changed since the base. */
  apply(): { image: MetadataImage; changes: MetadataChanges } {
    const base = this.#base
    let topicsByName = base.topicsByName
    let topicsById = base.topicsById
    const createdTopics: TopicImage[] = []
    const deletedTopics: TopicImage[] = []
    if (this.#topics.size > 0) {
      const byName = new Map(base.topicsByName)
      const byId = new Map(base.topicsById)
      for (const [id, t] of this.#topics) {
        const old = base.topicsById.get(id)
        if (t === null) {
          if (old !== undefined) {
            deletedTopics.push(old)
            byId.delete(id)
            byName.delete(old.name)
          }
          continue
        }
        const image: TopicImage = { name: t.name, id: t.id, partitions: t.partitions }
        byId.set(id, image)
        byName.set(t.name, image)
        if (this.#created.has(id)) createdTopics.push(image)
      }
      topicsByName = byName
      topicsById = byId
    }
    const changedPartitions: Array<{ topic: TopicImage; partition: number }> = []
    for (const [id, parts] of this.#changedPartitions) {
      const topic = topicsById.get(id)
      if (topic === undefined) continue
      for (const partition of parts) changedPartitions.push({ topic, partition })
    }
    const image: MetadataImage = {
      provenance: this.#provenance,
      features: this.#features ?? base.features,
      brokers: this.#brokers ?? base.brokers,
      controllers: this.#controllers ?? base.controllers,
      topicsByName,
      topicsById,
      configs: this.#configs ?? base.configs,
      nextProducerId: this.#nextProducerId,
      acls: this.#acls ?? base.acls,
      scramCredentials: this.#scramCredentials ?? base.scramCredentials,
    }
    return {
      image,
      changes: {
        createdTopics,
        deletedTopics,
        changedPartitions,
        changedBrokers: [...this.#changedBrokers],
        changedConfigs: [...this.#changedConfigs],
        changedAcls: [...this.#changedAcls],
      },
    }
  }
}

/** `(image, records) -> image`: the pure form, for replaying a committed batch. */
export function applyRecords(
  image: MetadataImage,
  records: readonly DecodedMetadataRecord[],
  provenance?: Provenance,
): MetadataImage {
  const delta = new MetadataDelta(image)
  for (const r of records) delta.replay(r)
  const next = delta.apply().image
  return provenance === undefined ? next : { ...next, provenance }
}

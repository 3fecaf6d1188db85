/**
 * Builds the MetadataImage from the committed metadata log: snapshots and committed entries in,
 * one new image per committed batch out, published to whoever listens (the controller, the broker).
 * Also the other direction: an image as the records that recreate it, for snapshots.
 */
import { type BrokerId, NO_NODE } from '../model/index.ts'
import {
  decodeMetadataRecord,
  encodeMetadataRecord,
  type MetadataRecordType,
  metadataRecordTypes as T,
} from '../protocol/index.ts'
import { type MetadataChanges, MetadataDelta } from './delta.ts'
import { EMPTY_IMAGE, type MetadataImage } from './image.ts'

/** A committed entry as the quorum hands it over (structurally raft's entries). */
export type CommittedEntry =
  | { readonly kind: 'data'; readonly offset: bigint; readonly epoch: number; readonly data: Uint8Array }
  | {
      readonly kind: 'leaderChange'
      readonly offset: bigint
      readonly epoch: number
      readonly leaderId: BrokerId
    }

export interface ImagePublication {
  readonly image: MetadataImage
  readonly changes: MetadataChanges
  /** The leader changes committed in this batch, in order. */
  readonly leaderChanges: ReadonlyArray<{
    readonly epoch: number
    readonly leaderId: BrokerId
    readonly offset: bigint
  }>
}

export type ImageSubscriber = (publication: ImagePublication) => void

export class MetadataLoader {
  #image: MetadataImage = EMPTY_IMAGE
  readonly #subscribers: ImageSubscriber[] = []

  get image(): MetadataImage {
    return this.#image
  }

  subscribe(fn: ImageSubscriber): void {
    this.#subscribers.push(fn)
  }

  /** Replaces everything with a snapshot's image (records in `snapshotToRecords`'s format). */
  loadSnapshot(bytes: Uint8Array, provenance: { offset: bigint; epoch: number }): void {
    const delta = new MetadataDelta(EMPTY_IMAGE)
    for (const value of splitSnapshot(bytes)) delta.replay(decodeMetadataRecord(Buffer.from(value)))
    delta.replay({ type: T.NoOp, version: 0, data: {} }, provenance)
    const { image, changes } = delta.apply()
    this.#publish(image, changes, [])
  }

  /** Applies committed entries in order; publishes one image for the whole batch. */
  applyCommitted(entries: readonly CommittedEntry[]): void {
    if (entries.length === 0) return
    const delta = new MetadataDelta(this.#image)
    const leaderChanges: Array<{ epoch: number; leaderId: BrokerId; offset: bigint }> = []
    for (const e of entries) {
      if (e.kind === 'leaderChange') {
        leaderChanges.push({ epoch: e.epoch, leaderId: e.leaderId, offset: e.offset })
        delta.replay({ type: T.NoOp, version: 0, data: {} }, { offset: e.offset, epoch: e.epoch })
        continue
      }
      delta.replay(decodeMetadataRecord(Buffer.from(e.data.buffer, e.data.byteOffset, e.data.length)), {
        offset: e.offset,
        epoch: e.epoch,
      })
    }
    const { image, changes } = delta.apply()
    this.#publish(image, changes, leaderChanges)
  }

  #publish(
    image: MetadataImage,
    changes: MetadataChanges,
    leaderChanges: ImagePublication['leaderChanges'],
  ): void {
    this.#image = image
    for (const fn of this.#subscribers) fn({ image, changes, leaderChanges })
  }
}

/** Snapshot bytes: each record frame prefixed by its int32 length. */
function splitSnapshot(bytes: Uint8Array): Buffer[] {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length)
  const out: Buffer[] = []
  let at = 0
  while (at + 4 <= buf.length) {
    const n = buf.readInt32BE(at)
    if (n < 0 || at + 4 + n > buf.length) throw new Error('metadata snapshot is truncated')
    out.push(buf.subarray(at + 4, at + 4 + n))
    at += 4 + n
  }
  if (at !== buf.length) throw new Error('metadata snapshot has trailing bytes')
  return out
}

function frame<TIn>(out: Buffer[], type: MetadataRecordType<unknown, TIn>, data: TIn, version = 0): void {
  const value = encodeMetadataRecord(type, version, data)
  const len = Buffer.alloc(4)
  len.writeInt32BE(value.length)
  out.push(len, value)
}

/** The records that recreate `image` from nothing, framed for a snapshot. */
export function imageToSnapshot(image: MetadataImage): Buffer {
  const out: Buffer[] = []
  for (const [name, level] of image.features) frame(out, T.FeatureLevel, { name, featureLevel: level })
  for (const b of image.brokers.values()) {
    frame(
      out,
      T.RegisterBroker,
      {
        brokerId: b.id,
        brokerEpoch: b.epoch,
        incarnationId: b.incarnationId,
        endPoints: b.endpoints,
        features: b.features,
        rack: b.rack,
        fenced: b.fenced,
        inControlledShutdown: b.inControlledShutdown,
        logDirs: b.logDirs,
      },
      3, // v3 keeps LogDirs (KIP-858)
    )
  }
  for (const c of image.controllers.values()) {
    frame(out, T.RegisterController, {
      controllerId: c.id,
      incarnationId: c.incarnationId,
      endPoints: c.endpoints,
      features: c.features,
    })
  }
  for (const t of image.topicsById.values()) {
    frame(out, T.Topic, { name: t.name, topicId: t.id })
    for (const [partitionId, p] of t.partitions) {
      frame(out, T.Partition, {
        partitionId,
        topicId: t.id,
        replicas: p.replicas,
        isr: p.isr,
        removingReplicas: p.removingReplicas,
        addingReplicas: p.addingReplicas,
        leader: p.leader,
        leaderRecoveryState: p.leaderRecoveryState,
        leaderEpoch: p.leaderEpoch,
        partitionEpoch: p.partitionEpoch,
      })
    }
  }
  for (const [key, configs] of image.configs) {
    const at = key.indexOf(':')
    const resourceType = Number(key.slice(0, at))
    const resourceName = key.slice(at + 1)
    for (const [name, value] of configs) frame(out, T.Config, { resourceType, resourceName, name, value })
  }
  for (const acl of image.acls.values()) frame(out, T.AccessControlEntry, acl)
  for (const [mechanism, users] of image.scramCredentials) {
    for (const [name, c] of users) frame(out, T.UserScramCredential, { name, mechanism, ...c })
  }
  if (image.nextProducerId > 0n)
    frame(out, T.ProducerIds, {
      brokerId: NO_NODE,
      brokerEpoch: -1n,
      nextProducerId: image.nextProducerId,
    })
  return Buffer.concat(out)
}

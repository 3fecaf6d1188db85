/**
 * What every controller decision takes and gives: the latest image (including decisions not yet
 * committed), injected randomness and settings in; records to append and a response out.
 */
import type { Random } from '../io/index.ts'
import type { MetadataImage } from '../metadata/index.ts'
import { type BrokerId, Uuid } from '../model/index.ts'
import type { MetadataRecordType } from '../protocol/index.ts'

/** A metadata record to append, in the form an encoder accepts. */
export interface PendingRecord {
  readonly type: MetadataRecordType<unknown, unknown>
  readonly version: number
  readonly data: unknown
}

/** Builds a PendingRecord with `data` checked against the record type. */
export function pendingRecord<TIn>(
  type: MetadataRecordType<unknown, TIn>,
  version: number,
  data: TIn,
): PendingRecord {
  return { type: type as MetadataRecordType<unknown, unknown>, version, data }
}

/** Settings the controller decides with (broker defaults for new topics, and so on). */
export interface ControllerSettings {
  /** `num.partitions` */
  readonly defaultNumPartitions: number
  /** `default.replication.factor` */
  readonly defaultReplicationFactor: number
  /** `delete.topic.enable` */
  readonly deleteTopicEnable: boolean
  /**
   * `max.broker.partitions` as resolved: the most partition replicas placed on one broker.
   * Absent or 0: no bound.
   */
  readonly brokerPartitionsMax?: number
}

export interface DecisionContext {
  readonly image: MetadataImage
  readonly random: Random
  readonly settings: ControllerSettings
  /** Checks topic config overrides; returns the first problem, or null. */
  readonly validateTopicConfigs: (
    configs: ReadonlyMap<string, string>,
  ) => { key: string; message: string } | null
}

/** The most records the controller proposes at once (Kafka's `MAX_RECORDS_PER_BATCH`). */
export const RECORDS_PER_BATCH_MAX = 10_000
/** The most records one client request may need, all in one atomic batch (Kafka's `MAX_RECORDS_PER_USER_OP`). */
export const RECORDS_PER_USER_OP_MAX = RECORDS_PER_BATCH_MAX
/** What Kafka's controller answers a request whose records do not fit one atomic batch. */
export const EXCESSIVE_BATCH_MESSAGE = 'Unable to perform excessively large batch operation.'

/** A whole request refused as Kafka's controller refuses it: POLICY_VIOLATION with this message. */
export class PolicyViolationError extends Error {
  override name = 'PolicyViolationError'
}

export interface Decision<Response> {
  readonly records: readonly PendingRecord[]
  readonly response: Response
}

const METADATA_TOPIC_ID = 'AAAAAAAAAAAAAAAAAAAAAQ'

/**
 * A random Kafka Uuid, as Kafka's `Uuid.randomUuid()`: never the zero id or the metadata topic's
 * reserved id, and never one whose text starts with '-' (it would read as a command-line flag).
 */
export function randomUuid(random: Random): Uuid {
  for (;;) {
    const bytes = Buffer.alloc(16)
    for (let i = 0; i < 16; i += 4) bytes.writeUInt32BE(random.nextU32() >>> 0, i)
    // Version 4, variant 1, as java.util.UUID.randomUUID.
    bytes[6] = (bytes[6]! & 0x0f) | 0x40
    bytes[8] = (bytes[8]! & 0x3f) | 0x80
    const text = bytes.toString('base64url')
    if (text !== 'AAAAAAAAAAAAAAAAAAAAAA' && text !== METADATA_TOPIC_ID && !text.startsWith('-'))
      return Uuid(text)
  }
}

/** Brokers that can take new replicas: registered, unfenced, not shutting down. */
export function usableBrokers(image: MetadataImage): Array<{ id: BrokerId; rack: string | null }> {
  const out: Array<{ id: BrokerId; rack: string | null }> = []
  for (const b of image.brokers.values()) {
    if (!b.fenced && !b.inControlledShutdown) out.push({ id: b.id, rack: b.rack })
  }
  return out.sort((a, b) => a.id - b.id)
}

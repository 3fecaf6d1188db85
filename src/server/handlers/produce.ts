/**
 * Produce v3-12: exactly one record batch (magic 2) per partition, appended as the producer's bytes
 * (compression kept); acks 0 (no response), 1 and -1 (waits for the ISR and, with flush.on.ack, the
 * fsync). Transactional batches need WRITE on the request's transactional id and open or continue
 * their producer's transaction in the partition's producer state; the view verifies them with
 * their coordinator first (KIP-890, `transaction.partition.verification.enable`; v12+ adds the
 * partitions to the transaction). Not implemented: recompression to a topic `compression.type` other than `producer`, closing the connection after
 * a failed acks=0 request, quotas (throttle 0).
 */
import type { MetadataImage } from '../../metadata/index.ts'
import type { BrokerId, TopicName } from '../../model/index.ts'
import {
  apis,
  BatchOffsets,
  batchSizeAt,
  Compression,
  compressionOf,
  ErrorCode,
  errorCodeOf,
  isTransactional,
  LOG_OVERHEAD,
  MAGIC_V2,
  type ProduceResponseData,
} from '../../protocol/index.ts'
import type { ProduceEntry, ProduceResult } from '../../replication/index.ts'
import { AclOperation, authorize, ResourceType } from '../authorize.ts'
import { defineHandler, type Handler, NO_RESPONSE } from '../handler.ts'
import { currentLeaderOf, nodeEndpointsOf, wantsLeaderHint } from './current-leader.ts'
import { INTERNAL_TOPIC_NAMES } from './metadata.ts'

/** The first Produce version served: v3 is the first that carries record batches (magic 2). */
export const PRODUCE_VERSION_MIN = 3
/** The Java AdminClient's client id, which Kafka lets write to internal topics. */
const ADMIN_CLIENT_ID = '__admin_client'

export interface ProduceView {
  image(): MetadataImage
  appendRecords(
    entries: readonly ProduceEntry[],
    options: {
      readonly acks: number
      readonly timeoutMs: number
      /** The request's, for KIP-890's verification of transactional batches with the coordinator. */
      readonly transactionalId: string | null
      readonly apiVersion: number
    },
  ): Promise<ProduceResult[]>
}

type PartitionOut = ProduceResponseData.PartitionProduceResponseIn

/**
 * Kafka's `ProduceRequest.validateRecords`: v3+ carries exactly one magic-2 batch per partition,
 * and zstd needs v7+. Deeper checks (CRC, lengths, sequences) are the log's.
 */
export function produceRecordsProblem(
  version: number,
  records: Buffer | null,
): { errorCode: ErrorCode; message: string } | null {
  if (records === null || records.length === 0) {
    return {
      errorCode: ErrorCode.InvalidRecord,
      message: `Produce requests with version ${version} must have at least one record batch per partition`,
    }
  }
  if (records.length <= BatchOffsets.magic) {
    return { errorCode: ErrorCode.CorruptMessage, message: 'the record batch is truncated' }
  }
  if (records.readInt8(BatchOffsets.magic) !== MAGIC_V2) {
    return {
      errorCode: ErrorCode.InvalidRecord,
      message: `Produce requests with version ${version} are only allowed to contain record batches with magic version 2`,
    }
  }
  const size = batchSizeAt(records, 0)
  if (size < LOG_OVERHEAD || size > records.length) {
    return { errorCode: ErrorCode.CorruptMessage, message: 'the record batch is truncated' }
  }
  if (size < records.length) {
    return {
      errorCode: ErrorCode.InvalidRecord,
      message: `Produce requests with version ${version} are only allowed to contain exactly one record batch per partition`,
    }
  }
  if (version < 7 && compressionOf(records.readInt16BE(BatchOffsets.attributes)) === Compression.zstd) {
    return {
      errorCode: ErrorCode.UnsupportedCompressionType,
      message: `Produce requests with version ${version} are not allowed to use ZStandard compression`,
    }
  }
  return null
}

export function makeProduceHandler(view: ProduceView): Handler {
  return defineHandler(apis.Produce, { minVersion: PRODUCE_VERSION_MIN }, async (req, ctx) => {
    const v = ctx.apiVersion
    const image = view.image()
    const acksValid = req.acks === -1 || req.acks === 0 || req.acks === 1
    const internalAllowed = ctx.header.clientId === ADMIN_CLIENT_ID
    const authz = authorize(ctx)
    // Without an authorizer too: transactional batches need a transactional id (Kafka's
    // handleProduceRequest), the check one int16 per partition.
    if (transactionalIdDenied(req, authz))
      return req.acks === 0
        ? NO_RESPONSE
        : deniedResponse(req, v, ErrorCode.TransactionalIdAuthorizationFailed)
    /** Per request partition, in order: either an early answer or an index into `entries`. */
    const slots: Array<{ topic: TopicName; partition: number; early: PartitionOut | null; entry: number }> =
      []
    const entries: ProduceEntry[] = []
    const early = (
      index: number,
      errorCode: ErrorCode,
      errorMessage: string | null = null,
    ): PartitionOut => ({
      index,
      errorCode,
      baseOffset: -1n,
      logAppendTimeMs: -1n,
      logStartOffset: -1n,
      ...(v >= 8 ? { recordErrors: [], errorMessage } : {}),
    })
    for (const t of req.topicData) {
      const topic = image.topicsByName.get(t.name)
      // Once per topic, never per partition: the hot path (Kafka checks WRITE before anything else).
      const writable = authz.allowed(AclOperation.Write, ResourceType.Topic, t.name)
      for (const p of t.partitionData) {
        const slot = { topic: t.name, partition: p.index, early: null as PartitionOut | null, entry: -1 }
        slots.push(slot)
        if (!writable) {
          slot.early = early(p.index, ErrorCode.TopicAuthorizationFailed)
          continue
        }
        if (!acksValid) {
          slot.early = early(p.index, ErrorCode.InvalidRequiredAcks)
          continue
        }
        if (INTERNAL_TOPIC_NAMES.has(t.name) && !internalAllowed) {
          slot.early = early(
            p.index,
            ErrorCode.InvalidTopicException,
            `Cannot append to internal topic ${t.name}`,
          )
          continue
        }
        // Kafka creates topics on Metadata requests only, never on Produce.
        if (topic === undefined || !topic.partitions.has(p.index)) {
          slot.early = early(p.index, ErrorCode.UnknownTopicOrPartition)
          continue
        }
        const problem = produceRecordsProblem(v, p.records)
        if (problem !== null) {
          slot.early = early(p.index, problem.errorCode, problem.message)
          continue
        }
        slot.entry = entries.length
        entries.push({ topic: t.name, partition: p.index, records: p.records! })
      }
    }
    const results =
      entries.length === 0
        ? []
        : await view.appendRecords(entries, {
            acks: req.acks,
            timeoutMs: req.timeoutMs,
            transactionalId: req.transactionalId,
            apiVersion: v,
          })
    if (req.acks === 0) return NO_RESPONSE
    const responses: ProduceResponseData.TopicProduceResponseIn[] = []
    const byTopic = new Map<string, PartitionOut[]>()
    const leaders: BrokerId[] = []
    // Leader hints from the image now, not the one the request began with: an acks=all append
    // that waited while the leadership moved must name the new leader, or the client, which takes
    // a hint only in a newer leader epoch, asks Metadata and keeps sending here meanwhile.
    const latest = view.image()
    for (const slot of slots) {
      let out = slot.early
      if (out === null) {
        const r = results[slot.entry]!
        out = {
          index: slot.partition,
          errorCode: r.errorCode,
          baseOffset: r.baseOffset,
          logAppendTimeMs: BigInt(r.logAppendTimeMs),
          logStartOffset: r.logStartOffset,
          ...(v >= 8
            ? { recordErrors: [], errorMessage: r.errorCode === ErrorCode.None ? null : r.errorMessage }
            : {}),
        }
      }
      if (v >= 10 && wantsLeaderHint(errorCodeOf(out.errorCode ?? ErrorCode.None))) {
        const leader = currentLeaderOf(latest, slot.topic, slot.partition)
        if (leader !== null) {
          out = { ...out, currentLeader: leader }
          leaders.push(leader.leaderId)
        }
      }
      let list = byTopic.get(slot.topic)
      if (list === undefined) {
        list = []
        byTopic.set(slot.topic, list)
        responses.push({ name: slot.topic, partitionResponses: list })
      }
      list.push(out)
    }
    return {
      responses,
      throttleTimeMs: 0,
      ...(v >= 10 && leaders.length > 0
        ? { nodeEndpoints: nodeEndpointsOf(latest, leaders, ctx.listenerName) }
        : {}),
    }
  })
}

/**
 * Kafka's check of transactional records: WRITE on the request's transactional id, which a
 * request with transactional batches and no transactional id is denied.
 */
function transactionalIdDenied(
  req: {
    transactionalId: string | null
    topicData: readonly { partitionData: readonly { records: Buffer | null }[] }[]
  },
  authz: ReturnType<typeof authorize>,
): boolean {
  const transactional = req.topicData.some((t) =>
    t.partitionData.some(
      (p) =>
        p.records !== null &&
        p.records.length > BatchOffsets.attributes + 1 &&
        isTransactional(p.records.readInt16BE(BatchOffsets.attributes)),
    ),
  )
  if (!transactional) return false
  const id = req.transactionalId
  return id === null || !authz.allowed(AclOperation.Write, ResourceType.TransactionalId, id)
}

/** Every partition answers `errorCode` (Kafka's error response of a Produce request). */
function deniedResponse(
  req: { topicData: readonly { name: TopicName; partitionData: readonly { index: number }[] }[] },
  v: number,
  errorCode: ErrorCode,
) {
  return {
    responses: req.topicData.map((t) => ({
      name: t.name,
      partitionResponses: t.partitionData.map((p) => ({
        index: p.index,
        errorCode,
        baseOffset: -1n,
        logAppendTimeMs: -1n,
        logStartOffset: -1n,
        ...(v >= 8 ? { recordErrors: [], errorMessage: null } : {}),
      })),
    })),
    throttleTimeMs: 0,
  }
}

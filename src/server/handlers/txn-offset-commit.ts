/**
 * TxnOffsetCommit v0-5: a transactional producer's offsets for a group, written by the group
 * coordinator in one transactional batch of the producer and pending until the transaction's
 * marker (KafkaApis.handleTxnOffsetCommitRequest). WRITE on the transactional id (else every
 * partition answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED), READ on the group (else
 * GROUP_AUTHORIZATION_FAILED), READ on each topic (else TOPIC_AUTHORIZATION_FAILED for its
 * partitions); partitions the metadata does not know are UNKNOWN_TOPIC_OR_PARTITION. v3+ carries
 * the member's generation, id and instance id (KIP-447), checked against the group. Before v2,
 * COORDINATOR_LOAD_IN_PROGRESS is answered COORDINATOR_NOT_AVAILABLE, as Kafka answers clients
 * older than KAFKA-7296. KIP-890's verification of the transaction with its coordinator (v5) is
 * not made.
 */
import type { CommitResult, TxnCommitInput } from '../../coordinator/index.ts'
import type { TopicName } from '../../model/index.ts'
import { apis, ErrorCode, errorCodeOf } from '../../protocol/index.ts'
import { AclOperation, authorize, ResourceType } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'

export interface TxnOffsetCommitView {
  commitTransactionalOffsets(input: TxnCommitInput): Promise<CommitResult>
  /**
   * KIP-890 (`transaction.partition.verification.enable`): the group's `__consumer_offsets`
   * partition verified with the transaction coordinator (v5+: added to the transaction, Kafka 4's
   * implicit AddOffsetsToTxn); NONE to commit, with the guard the write carries, else the error
   * every partition answers.
   */
  verifyInTransaction?(input: {
    transactionalId: string
    groupId: string
    producerId: bigint
    producerEpoch: number
    addPartition: boolean
    abortableKnown: boolean
  }): Promise<{ readonly errorCode: ErrorCode; readonly verificationGuard: object | null | undefined }>
  /** Whether the metadata knows this partition. */
  partitionExists(topic: TopicName, partition: number): boolean
}

export function makeTxnOffsetCommitHandler(view: TxnOffsetCommitView): Handler {
  return defineHandler(apis.TxnOffsetCommit, {}, async (req, ctx) => {
    const v = ctx.apiVersion
    const authz = authorize(ctx)
    const answer = (errorOf: (topic: TopicName, partition: number) => ErrorCode) => ({
      throttleTimeMs: 0,
      topics: req.topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => {
          const errorCode = errorOf(t.name, p.partitionIndex)
          return {
            partitionIndex: p.partitionIndex,
            errorCode:
              v < 2 && errorCode === ErrorCode.CoordinatorLoadInProgress
                ? ErrorCode.CoordinatorNotAvailable
                : errorCode,
          }
        }),
      })),
    })
    if (!authz.allowed(AclOperation.Write, ResourceType.TransactionalId, req.transactionalId))
      return answer(() => ErrorCode.TransactionalIdAuthorizationFailed)
    if (!authz.allowed(AclOperation.Read, ResourceType.Group, req.groupId))
      return answer(() => ErrorCode.GroupAuthorizationFailed)
    const refused = new Map<string, ErrorCode>()
    const key = (topic: TopicName, partition: number) => JSON.stringify([topic, partition])
    const topics: TxnCommitInput['topics'][number][] = []
    for (const t of req.topics) {
      const readable = authz.allowed(AclOperation.Read, ResourceType.Topic, t.name)
      const known = t.partitions.filter((p) => {
        const errorCode = !readable
          ? ErrorCode.TopicAuthorizationFailed
          : view.partitionExists(t.name, p.partitionIndex)
            ? ErrorCode.None
            : ErrorCode.UnknownTopicOrPartition
        if (errorCode !== ErrorCode.None) refused.set(key(t.name, p.partitionIndex), errorCode)
        return errorCode === ErrorCode.None
      })
      if (known.length === 0) continue
      topics.push({
        name: t.name,
        partitions: known.map((p) => ({
          partitionIndex: p.partitionIndex,
          committedOffset: p.committedOffset,
          committedLeaderEpoch: v >= 2 ? p.committedLeaderEpoch : -1,
          commitTimestamp: -1n,
          committedMetadata: p.committedMetadata,
        })),
      })
    }
    let verificationGuard: object | null | undefined
    if (topics.length > 0 && view.verifyInTransaction !== undefined) {
      const verified = await view.verifyInTransaction({
        transactionalId: req.transactionalId,
        groupId: req.groupId,
        producerId: req.producerId,
        producerEpoch: req.producerEpoch,
        addPartition: v >= 5,
        abortableKnown: v >= 4,
      })
      if (verified.errorCode !== ErrorCode.None)
        return answer((topic, partition) => refused.get(key(topic, partition)) ?? verified.errorCode)
      verificationGuard = verified.verificationGuard
    }
    const committed =
      topics.length === 0
        ? []
        : await view.commitTransactionalOffsets({
            groupId: req.groupId,
            producerId: req.producerId,
            producerEpoch: req.producerEpoch,
            generationId: v >= 3 ? req.generationId : -1,
            memberId: v >= 3 ? req.memberId : '',
            groupInstanceId: v >= 3 ? req.groupInstanceId : null,
            topics,
            ...(verificationGuard === undefined ? {} : { verificationGuard }),
          })
    for (const t of committed) {
      for (const p of t.partitions ?? []) {
        refused.set(
          key(t.name ?? ('' as TopicName), p.partitionIndex ?? -1),
          errorCodeOf(p.errorCode ?? ErrorCode.None),
        )
      }
    }
    return answer((topic, partition) => refused.get(key(topic, partition)) ?? ErrorCode.UnknownServerError)
  })
}

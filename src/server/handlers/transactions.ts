/**
 * The transaction coordinator's APIs: AddPartitionsToTxn v0-5 (v3 and below from producers; v4+
 * batches of transactions from brokers, CLUSTER_ACTION, whose verifyOnly entries check the
 * partitions are in the transaction), AddOffsetsToTxn v0-4, EndTxn v0-5 (v5+ is transaction
 * version 2, KIP-890), DescribeTransactions v0 and ListTransactions v0-1. Each checks Kafka's ACLs
 * (WRITE on the transactional id; WRITE on each topic; READ on the group; DESCRIBE to describe or
 * list) and hands the coordinator the request; PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH for
 * the versions before it.
 */
import type {
  DescribedTransaction,
  ListTransactionsFilter,
  TransactionState,
  TxnIdAnswer,
  TxnPartition,
} from '../../coordinator/index.ts'
import { fencedErrorFor } from '../../coordinator/index.ts'
import { ProducerId, type TopicName, TransactionalId } from '../../model/index.ts'
import { apis, ErrorCode } from '../../protocol/index.ts'
import { AclOperation, authorize, ResourceType } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'

export interface TransactionsView {
  addPartitionsToTxn(req: {
    transactionalId: string
    producerId: bigint
    producerEpoch: number
    partitions: readonly TxnPartition[]
  }): Promise<ErrorCode>
  verifyPartitionsInTxn(req: {
    transactionalId: string
    producerId: bigint
    producerEpoch: number
    partitions: readonly TxnPartition[]
  }): Promise<ErrorCode[]>
  addOffsetsToTxn(req: {
    transactionalId: string
    producerId: bigint
    producerEpoch: number
    groupId: string
  }): Promise<ErrorCode>
  endTxn(req: {
    transactionalId: string
    producerId: bigint
    producerEpoch: number
    committed: boolean
    clientTransactionVersion: number
  }): Promise<TxnIdAnswer>
  describeTransactions(ids: readonly string[]): Promise<DescribedTransaction[]>
  listTransactions(filter: ListTransactionsFilter): {
    errorCode: ErrorCode
    unknownStateFilters: string[]
    transactions: { transactionalId: string; producerId: bigint; state: TransactionState }[]
  }
  /** Whether the topic exists (an unknown one is UNKNOWN_TOPIC_OR_PARTITION). */
  topicExists(topic: TopicName): boolean
}

type TopicsIn = readonly { readonly name: TopicName; readonly partitions: readonly number[] }[]

function topicResults(topics: TopicsIn, errorOf: (topic: TopicName, partition: number) => ErrorCode) {
  return topics.map((t) => ({
    name: t.name,
    resultsByPartition: t.partitions.map((partitionIndex) => ({
      partitionIndex,
      partitionErrorCode: errorOf(t.name, partitionIndex),
    })),
  }))
}

function partitionsOf(topics: TopicsIn): TxnPartition[] {
  return topics.flatMap((t) => t.partitions.map((partition) => ({ topic: t.name, partition })))
}

export function makeTransactionHandlers(view: TransactionsView): Handler[] {
  return [
    defineHandler(apis.AddPartitionsToTxn, {}, async (req, ctx) => {
      const v = ctx.apiVersion
      const authz = authorize(ctx)
      if (v >= 4) {
        if (!authz.cluster(AclOperation.ClusterAction)) {
          return {
            throttleTimeMs: 0,
            errorCode: ErrorCode.ClusterAuthorizationFailed,
            resultsByTransaction: [],
          }
        }
        const resultsByTransaction = await Promise.all(
          req.transactions.map(async (t) => {
            const partitions = partitionsOf(t.topics)
            const base = {
              transactionalId: t.transactionalId,
              producerId: t.producerId,
              producerEpoch: t.producerEpoch,
              partitions,
            }
            const errors = t.verifyOnly
              ? await view.verifyPartitionsInTxn(base)
              : partitions.map(() => ErrorCode.None)
            if (!t.verifyOnly) {
              const errorCode = await view.addPartitionsToTxn(base)
              errors.fill(errorCode)
            }
            let i = 0
            return {
              transactionalId: t.transactionalId,
              topicResults: topicResults(t.topics, () => errors[i++]!),
            }
          }),
        )
        return { throttleTimeMs: 0, errorCode: ErrorCode.None, resultsByTransaction }
      }
      const topics = req.v3AndBelowTopics
      const answer = (errorOf: (topic: TopicName, partition: number) => ErrorCode) => ({
        throttleTimeMs: 0,
        resultsByTopicV3AndBelow: topicResults(topics, errorOf),
      })
      const id = req.v3AndBelowTransactionalId
      if (!authz.allowed(AclOperation.Write, ResourceType.TransactionalId, id)) {
        return answer(() => ErrorCode.TransactionalIdAuthorizationFailed)
      }
      // As Kafka: a topic not authorized, or unknown, fails the request; the others are not attempted.
      const refused = new Map<string, ErrorCode>()
      for (const t of topics) {
        if (!authz.allowed(AclOperation.Write, ResourceType.Topic, t.name)) {
          refused.set(t.name, ErrorCode.TopicAuthorizationFailed)
        } else if (!view.topicExists(t.name)) refused.set(t.name, ErrorCode.UnknownTopicOrPartition)
      }
      if (refused.size > 0) return answer((t) => refused.get(t) ?? ErrorCode.OperationNotAttempted)
      const errorCode = await view.addPartitionsToTxn({
        transactionalId: id,
        producerId: req.v3AndBelowProducerId,
        producerEpoch: req.v3AndBelowProducerEpoch,
        partitions: partitionsOf(topics),
      })
      return answer(() => fencedErrorFor('AddPartitionsToTxn', v, errorCode))
    }),
    defineHandler(apis.AddOffsetsToTxn, {}, async (req, ctx) => {
      const authz = authorize(ctx)
      const answer = (errorCode: ErrorCode) => ({ throttleTimeMs: 0, errorCode })
      if (!authz.allowed(AclOperation.Write, ResourceType.TransactionalId, req.transactionalId)) {
        return answer(ErrorCode.TransactionalIdAuthorizationFailed)
      }
      if (!authz.allowed(AclOperation.Read, ResourceType.Group, req.groupId)) {
        return answer(ErrorCode.GroupAuthorizationFailed)
      }
      const errorCode = await view.addOffsetsToTxn(req)
      return answer(fencedErrorFor('AddOffsetsToTxn', ctx.apiVersion, errorCode))
    }),
    defineHandler(apis.EndTxn, {}, async (req, ctx) => {
      const authz = authorize(ctx)
      if (!authz.allowed(AclOperation.Write, ResourceType.TransactionalId, req.transactionalId)) {
        return {
          throttleTimeMs: 0,
          errorCode: ErrorCode.TransactionalIdAuthorizationFailed,
          producerId: ProducerId(-1n),
          producerEpoch: -1,
        }
      }
      const r = await view.endTxn({ ...req, clientTransactionVersion: ctx.apiVersion >= 5 ? 2 : 0 })
      return {
        throttleTimeMs: 0,
        errorCode: fencedErrorFor('EndTxn', ctx.apiVersion, r.errorCode),
        producerId: ProducerId(r.producerId),
        producerEpoch: r.producerEpoch,
      }
    }),
    defineHandler(apis.DescribeTransactions, {}, async (req, ctx) => {
      const authz = authorize(ctx)
      const allowed = req.transactionalIds.filter((id) =>
        authz.allowed(AclOperation.Describe, ResourceType.TransactionalId, id),
      )
      const described = new Map((await view.describeTransactions(allowed)).map((d) => [d.transactionalId, d]))
      return {
        throttleTimeMs: 0,
        transactionStates: req.transactionalIds.map((transactionalId) => {
          const d = described.get(transactionalId)
          if (d === undefined || d.errorCode !== ErrorCode.None) {
            // Kafka sets only the error of such an entry; the other fields keep the schema's defaults.
            return {
              errorCode: d?.errorCode ?? ErrorCode.TransactionalIdAuthorizationFailed,
              transactionalId,
              transactionState: '',
              transactionTimeoutMs: 0,
              transactionStartTimeMs: 0n,
              producerId: ProducerId(0n),
              producerEpoch: 0,
              topics: [],
            }
          }
          // Topics the principal may not describe are left out, as Kafka does.
          const byTopic = new Map<string, number[]>()
          for (const p of d.partitions) {
            if (!authz.allowed(AclOperation.Describe, ResourceType.Topic, p.topic)) continue
            byTopic.set(p.topic, [...(byTopic.get(p.topic) ?? []), p.partition])
          }
          return {
            errorCode: ErrorCode.None,
            transactionalId,
            transactionState: d.state,
            transactionTimeoutMs: d.timeoutMs,
            transactionStartTimeMs: BigInt(d.startTimeMs),
            producerId: ProducerId(d.producerId),
            producerEpoch: d.producerEpoch,
            topics: [...byTopic].map(([topic, partitions]) => ({ topic: topic as TopicName, partitions })),
          }
        }),
      }
    }),
    defineHandler(apis.ListTransactions, {}, (req, ctx) => {
      const authz = authorize(ctx)
      const r = view.listTransactions({
        states: req.stateFilters,
        producerIds: req.producerIdFilters,
        durationMs: ctx.apiVersion >= 1 ? Number(req.durationFilter) : -1,
      })
      return {
        throttleTimeMs: 0,
        errorCode: r.errorCode,
        unknownStateFilters: r.unknownStateFilters,
        transactionStates: r.transactions
          .filter((t) =>
            authz.allowed(AclOperation.Describe, ResourceType.TransactionalId, t.transactionalId),
          )
          .map((t) => ({
            transactionalId: TransactionalId(t.transactionalId),
            producerId: ProducerId(t.producerId),
            transactionState: t.state,
          })),
      }
    }),
  ]
}

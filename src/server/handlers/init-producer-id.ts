/**
 * InitProducerId v0-5 for idempotent producers (no transactional id): a fresh producer id at epoch 0
 * from this broker's block of ids (allocated by the controller, AllocateProducerIds); a request
 * naming its current id and epoch (KIP-360) gets a fresh id too, as Kafka does without a
 * transactional id. With a transactional id (WRITE on it), the transaction coordinator answers:
 * an epoch bump fencing the id's previous producer, KIP-360 recovery, `transaction.max.timeout.ms`;
 * without a coordinator, COORDINATOR_NOT_AVAILABLE. Not implemented: quotas.
 */
import { fencedErrorFor } from '../../coordinator/index.ts'
import { NO_PRODUCER_ID, ProducerId } from '../../model/index.ts'
import { apis, ErrorCode } from '../../protocol/index.ts'
import { AclOperation, authorize, ResourceType } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'

export interface InitProducerIdView {
  /** The next producer id, or the error that kept one from being allocated. */
  generateProducerId(): Promise<{ readonly producerId: bigint } | { readonly errorCode: ErrorCode }>
  /** The transaction coordinator's InitProducerId; absent: COORDINATOR_NOT_AVAILABLE. */
  initTransactional?(req: {
    transactionalId: string
    transactionTimeoutMs: number
    expected: { producerId: bigint; producerEpoch: number } | null
  }): Promise<{ errorCode: ErrorCode; producerId: bigint; producerEpoch: number }>
}

export function makeInitProducerIdHandler(view: InitProducerIdView): Handler {
  return defineHandler(apis.InitProducerId, {}, async (req, ctx) => {
    const failed = (errorCode: ErrorCode) => ({
      throttleTimeMs: 0,
      errorCode,
      producerId: NO_PRODUCER_ID,
      producerEpoch: -1,
    })
    const authz = authorize(ctx)
    if (req.transactionalId !== null) {
      if (!authz.allowed(AclOperation.Write, ResourceType.TransactionalId, req.transactionalId))
        return failed(ErrorCode.TransactionalIdAuthorizationFailed)
      if (view.initTransactional === undefined) return failed(ErrorCode.CoordinatorNotAvailable)
      // KIP-360 (v3+): a producer id and epoch other than -1 is the producer's current one.
      const expected =
        ctx.apiVersion >= 3 && (req.producerId !== NO_PRODUCER_ID || req.producerEpoch !== -1)
          ? { producerId: req.producerId, producerEpoch: req.producerEpoch }
          : null
      const r = await view.initTransactional({
        transactionalId: req.transactionalId,
        transactionTimeoutMs: req.transactionTimeoutMs,
        expected,
      })
      return {
        throttleTimeMs: 0,
        errorCode: fencedErrorFor('InitProducerId', ctx.apiVersion, r.errorCode),
        producerId: ProducerId(r.producerId),
        producerEpoch: r.producerEpoch,
      }
    }
    // Kafka's rule for idempotent producers: IDEMPOTENT_WRITE on the cluster, or WRITE on any topic.
    if (
      !authz.cluster(AclOperation.IdempotentWrite) &&
      !authz.anyOfType(AclOperation.Write, ResourceType.Topic)
    )
      return failed(ErrorCode.ClusterAuthorizationFailed)
    const r = await view.generateProducerId()
    if ('errorCode' in r) return failed(r.errorCode)
    return {
      throttleTimeMs: 0,
      errorCode: ErrorCode.None,
      producerId: ProducerId(r.producerId),
      producerEpoch: 0,
    }
  })
}

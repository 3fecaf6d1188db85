/**
 * InitProducerId v0-5 for idempotent producers (no transactional id): a fresh producer id at epoch 0
 * from this broker's block of ids (allocated by the controller, AllocateProducerIds); a request
 * naming its current id and epoch (KIP-360) gets a fresh id too, as Kafka does without a
 * transactional id. Not implemented: transactional ids (there is no transaction coordinator yet:
 * COORDINATOR_NOT_AVAILABLE), quotas.
 */
import { NO_PRODUCER_ID, ProducerId } from '../../model/index.ts'
import { apis, ErrorCode } from '../../protocol/index.ts'
import { AclOperation, authorize, ResourceType } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'

export interface InitProducerIdView {
  /** The next producer id, or the error that kept one from being allocated. */
  generateProducerId(): Promise<{ readonly producerId: bigint } | { readonly errorCode: ErrorCode }>
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
      return failed(ErrorCode.CoordinatorNotAvailable)
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

/**
 * InitProducerId v0-5 for idempotent producers (no transactional id): a fresh producer id at epoch 0
 * from this broker's block of ids (allocated by the controller, AllocateProducerIds); a request
 * naming its current id and epoch (KIP-360) gets a fresh id too, as Kafka does without a
 * transactional id. Not implemented: transactional ids (there is no transaction coordinator yet:
 * COORDINATOR_NOT_AVAILABLE), quotas.
 */
import { NO_PRODUCER_ID, ProducerId } from '../../model/index.ts'
import { apis, ErrorCode } from '../../protocol/index.ts'
import { defineHandler, type Handler } from '../handler.ts'

export interface InitProducerIdView {
  /** The next producer id, or the error that kept one from being allocated. */
  generateProducerId(): Promise<{ readonly producerId: bigint } | { readonly errorCode: ErrorCode }>
}

export function makeInitProducerIdHandler(view: InitProducerIdView): Handler {
  return defineHandler(apis.InitProducerId, {}, async (req) => {
    const failed = (errorCode: ErrorCode) => ({
      throttleTimeMs: 0,
      errorCode,
      producerId: NO_PRODUCER_ID,
      producerEpoch: -1,
    })
    if (req.transactionalId !== null) return failed(ErrorCode.CoordinatorNotAvailable)
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

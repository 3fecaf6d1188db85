/**
 * Producer id blocks (Kafka's ProducerIdControlManager): a broker asks for the next block of ids
 * for its idempotent producers; the controller hands out the next 1000 and records the new
 * `nextProducerId` in a ProducerIdsRecord, so no id is handed out twice, across failovers too. Pure.
 */
import type { MetadataImage } from '../metadata/index.ts'
import { NO_PRODUCER_ID, ProducerId } from '../model/index.ts'
import {
  type AllocateProducerIdsRequestData,
  type AllocateProducerIdsResponseData,
  ErrorCode,
  metadataRecordTypes as T,
} from '../protocol/index.ts'
import { type Decision, pendingRecord } from './decision.ts'

/** Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE. */
export const PRODUCER_ID_BLOCK_SIZE = 1000
const INT64_MAX = 2n ** 63n - 1n

type Response = AllocateProducerIdsResponseData.AllocateProducerIdsResponseIn

/**
 * The next block for `req.brokerId`, which must be registered with `req.brokerEpoch`
 * (STALE_BROKER_EPOCH otherwise, as Kafka's `checkBrokerEpoch`).
 */
export function allocateProducerIds(
  image: MetadataImage,
  req: AllocateProducerIdsRequestData.AllocateProducerIdsRequest,
): Decision<Response> {
  const refuse = (errorCode: ErrorCode): Decision<Response> => ({
    records: [],
    response: { errorCode, producerIdStart: NO_PRODUCER_ID, producerIdLen: 0 },
  })
  const broker = image.brokers.get(req.brokerId)
  if (broker === undefined || broker.epoch !== req.brokerEpoch) return refuse(ErrorCode.StaleBrokerEpoch)
  const start = image.nextProducerId
  if (start > INT64_MAX - BigInt(PRODUCER_ID_BLOCK_SIZE)) return refuse(ErrorCode.UnknownServerError)
  const next = start + BigInt(PRODUCER_ID_BLOCK_SIZE)
  return {
    records: [
      pendingRecord(T.ProducerIds, 0, {
        brokerId: req.brokerId,
        brokerEpoch: req.brokerEpoch,
        nextProducerId: ProducerId(next),
      }),
    ],
    response: {
      errorCode: ErrorCode.None,
      producerIdStart: ProducerId(start),
      producerIdLen: PRODUCER_ID_BLOCK_SIZE,
    },
  }
}

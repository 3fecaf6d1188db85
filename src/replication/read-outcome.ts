/** The answer of a partition read that failed: shared by `Partition` and `ReplicaManager`. */
import type { ErrorCode } from '../protocol/index.ts'
import type { ReadOutcome } from './partition.ts'

const EMPTY = Buffer.alloc(0)

/** A read that failed with `errorCode`: no records, and -1 for every offset, as Kafka answers. */
export function readError(errorCode: ErrorCode): ReadOutcome {
  return {
    errorCode,
    highWatermark: -1n,
    lastStableOffset: -1n,
    logStartOffset: -1n,
    logEndOffset: -1n,
    records: EMPTY,
    divergingEpoch: null,
  }
}

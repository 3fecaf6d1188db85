/** A Kafka error code from a response, with Kafka's name for it (`NOT_LEADER_OR_FOLLOWER`). */
import { ErrorCode, errorCodeOf, errorInfo } from '../protocol/index.ts'

export class KafkaError extends Error {
  override name = 'KafkaError'
  readonly code: ErrorCode
  /** Kafka's name for the code, e.g. TOPIC_ALREADY_EXISTS. */
  readonly errorName: string
  readonly retriable: boolean

  constructor(code: number, detail?: string | null) {
    const info = errorInfo(code)
    const errorName = info?.name ?? `ERROR_CODE_${code}`
    super(
      `${detail !== undefined && detail !== null && detail !== '' ? detail : (info?.message ?? 'unknown error')} (${errorName})`,
    )
    this.code = errorCodeOf(code)
    this.errorName = errorName
    this.retriable = info?.retriable ?? false
  }
}

/** Throws a KafkaError unless `code` is NONE. */
export function throwIfError(code: number, detail?: string | null): void {
  if (code !== ErrorCode.None) throw new KafkaError(code, detail)
}

/** Kafka's name for an error code (NONE for 0). */
export function errorName(code: number): string {
  return errorInfo(code)?.name ?? `ERROR_CODE_${code}`
}

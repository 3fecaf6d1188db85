/** Error codes as Weir's own code holds them: typed `ErrorCode`, never a bare `number`. */
import type { ErrorCode } from './generated/errors.ts'

/**
 * A code as a generated codec carries it (a `number` read from the wire), as an `ErrorCode`: where a
 * peer's answer enters Weir's own types. Unchecked, as Kafka's clients are: a newer peer may send a
 * code this release does not name, and it passes through as it came.
 */
export function errorCodeOf(code: number): ErrorCode {
  return code as ErrorCode
}

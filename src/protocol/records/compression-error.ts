/** The one error type the codecs throw for bad compressed input or a bounded output exceeded. */

/**
 * Why a codec refused its input:
 * - `corrupt`: the bytes are not a valid stream of that codec (truncated, bad checksum, bad offset).
 * - `too-large`: the output would exceed the caller's `maxBytes` (a decompression bomb, or a batch
 *   bigger than the broker accepts); nothing larger than `maxBytes` was allocated.
 * - `unsupported`: a valid stream using a feature Kafka does not accept (LZ4 dependent blocks or a
 *   dictionary, an unknown codec id).
 */
export type CompressionErrorKind = 'corrupt' | 'too-large' | 'unsupported'

export class CompressionError extends Error {
  override name = 'CompressionError'
  readonly kind: CompressionErrorKind

  constructor(kind: CompressionErrorKind, message: string) {
    super(message)
    this.kind = kind
  }
}

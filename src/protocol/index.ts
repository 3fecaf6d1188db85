/** Kafka's wire protocol, sans I/O: primitives, generated message codecs, framing, record batches. */
export * from './codec.ts'
export * from './frame.ts'
export * from './generated/index.ts'
export * from './metadata-record.ts'
export * from './records/index.ts'
export { DecodeError, Reader } from './wire/reader.ts'
export type { PendingTaggedField, RawTaggedField } from './wire/support.ts'
export { EncodeError, Writer, ZERO_COPY_BYTES_MIN } from './wire/writer.ts'

/** Weir's shared vocabulary: branded ids and units, and `assert`. Imports nothing. */

declare const brand: unique symbol
/** A nominal type: a `T` that only a deliberate cast can make. */
export type Brand<T, Name extends string> = T & { readonly [brand]: Name }

export type TopicName = Brand<string, 'TopicName'>
export type GroupId = Brand<string, 'GroupId'>
export type TransactionalId = Brand<string, 'TransactionalId'>
export type BrokerId = Brand<number, 'BrokerId'>
export type NodeId = BrokerId
export type ProducerId = Brand<bigint, 'ProducerId'>
export type PartitionIndex = number
export type LeaderEpoch = Brand<number, 'LeaderEpoch'>
/** A position in a partition log, as Kafka's int64. */
export type Offset = bigint
/** Kafka's Uuid in its canonical text form: 22 characters of unpadded base64url. */
export type Uuid = Brand<string, 'Uuid'>

export const ZERO_UUID = 'AAAAAAAAAAAAAAAAAAAAAA' as Uuid

export interface TopicPartition {
  readonly topic: TopicName
  readonly partition: PartitionIndex
}

/** A failed assertion: a programmer error. Assertions stay on in production. */
export class AssertionError extends Error {
  override name = 'AssertionError'
}

export function assert(condition: unknown, message = 'assertion failed'): asserts condition {
  if (!condition) throw new AssertionError(message)
}

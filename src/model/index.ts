/** Weir's shared vocabulary: branded ids and units, and `assert`. Imports nothing. */

declare const brand: unique symbol
/** A nominal type: a `T` that only its constructor below (a deliberate cast) can make. */
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

/*
 * The constructors: the one place each plain value becomes its branded id. Same name as the type,
 * as `ErrorCode`; no check, the values come as Kafka has them (-1 for none, any text for a name).
 */
export const TopicName = (name: string): TopicName => name as TopicName
export const GroupId = (id: string): GroupId => id as GroupId
export const TransactionalId = (id: string): TransactionalId => id as TransactionalId
export const BrokerId = (id: number): BrokerId => id as BrokerId
export const NodeId: (id: number) => NodeId = BrokerId
export const ProducerId = (id: bigint): ProducerId => id as ProducerId
export const LeaderEpoch = (epoch: number): LeaderEpoch => epoch as LeaderEpoch
export const Uuid = (text: string): Uuid => text as Uuid

/** Kafka's -1 for no node: no leader, a consumer's replica id, a peer not yet known. */
export const NO_NODE: NodeId = NodeId(-1)
/** Kafka's -1 for no producer id (RecordBatch.NO_PRODUCER_ID). */
export const NO_PRODUCER_ID: ProducerId = ProducerId(-1n)
export const ZERO_UUID: Uuid = Uuid('AAAAAAAAAAAAAAAAAAAAAA')

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

/**
 * Runs `fn` on every item, at most `limit` at once, in order of the items; once one fails no more
 * start, and it rejects with that first failure after those under way have settled.
 */
export async function eachAtMost<T>(
  items: Iterable<T>,
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  const it = items[Symbol.iterator]()
  let failure: { error: unknown } | null = null
  const worker = async (): Promise<void> => {
    for (let n = it.next(); failure === null && n.done !== true; n = it.next()) {
      try {
        await fn(n.value)
      } catch (error) {
        failure ??= { error }
      }
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, limit) }, worker))
  if (failure !== null) throw (failure as { error: unknown }).error
}

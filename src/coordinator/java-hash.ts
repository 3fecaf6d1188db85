/**
 * Which `__consumer_offsets` partition holds a group, and which `__transaction_state` partition a
 * transactional id: Kafka's `Utils.abs(key.hashCode()) % N`,
 * with Java's String.hashCode over UTF-16 code units, so Weir and Kafka agree on every group id.
 */
import { assert } from '../model/index.ts'

/** Java's `String.hashCode()`: `s[0]*31^(n-1) + ... + s[n-1]` in int32 arithmetic over UTF-16 units. */
export function javaStringHashCode(s: string): number {
  let h = 0
  for (let i = 0; i < s.length; i++) h = (Math.imul(h, 31) + s.charCodeAt(i)) | 0
  return h
}

/** Kafka's `Utils.abs`: the absolute value, with Integer.MIN_VALUE mapped to 0 (not itself). */
export function javaAbs(n: number): number {
  return n === -2147483648 ? 0 : Math.abs(n)
}

/**
 * The `__consumer_offsets` partition of a group, as Kafka's GroupCoordinatorService.partitionFor.
 *
 * ```ts
 * partitionForGroup('my-group', 50) // 12, as Kafka says
 * ```
 */
export function partitionForGroup(groupId: string, partitionCount: number): number {
  assert(Number.isInteger(partitionCount) && partitionCount >= 1, `partition count ${partitionCount}`)
  return javaAbs(javaStringHashCode(groupId)) % partitionCount
}

/** The `__transaction_state` partition of a transactional id, as Kafka's TransactionStateManager.partitionFor. */
export function partitionForTransactionalId(transactionalId: string, partitionCount: number): number {
  return partitionForGroup(transactionalId, partitionCount)
}

/**
 * The leader's ISR proposals to the controller (Kafka's `maybeExpandIsr` on a follower's fetch,
 * the isr-expiration task's `maybeShrinkIsr`, and KIP-704's recovery report), sent through the
 * `AlterPartitionManager`; without replication there is none.
 */
import type { MetadataImage } from '../metadata/index.ts'
import type { BrokerId } from '../model/index.ts'
import { ErrorCode } from '../protocol/index.ts'
import type { AlterPartitionManager } from './alter-partition-manager.ts'
import type { Partition } from './partition.ts'
import type { DataPathTotals } from './replication-stats.ts'

/** What the proposals read of the hosted partitions. */
export interface IsrHosted {
  getPartition(topic: string, partition: number): Partition | undefined
  partitions(): IterableIterator<Partition>
  readonly image: MetadataImage | null
}

export interface IsrProposalsOptions {
  readonly hosted: IsrHosted
  /** Null without replication. */
  readonly alterPartition: AlterPartitionManager | null
  /** `replica.lag.time.max.ms`; null without replication. */
  readonly lagTimeMsMax: number | null
  readonly log: (level: 'info' | 'warn' | 'error', message: string) => void
  /** Where accepted shrinks and expansions are counted. */
  readonly totals: DataPathTotals
}

export class IsrProposals {
  readonly #o: IsrProposalsOptions
  /** KIP-841: a follower may join the ISR only while registered, unfenced, not shutting down, in its current broker epoch. */
  readonly #eligible = (id: BrokerId, brokerEpoch: bigint): boolean => {
    const b = this.#o.hosted.image?.brokers.get(id)
    return (
      b !== undefined && !b.fenced && !b.inControlledShutdown && (brokerEpoch < 0n || b.epoch === brokerEpoch)
    )
  }

  constructor(options: IsrProposalsOptions) {
    this.#o = options
  }

  /** Proposes every lagging follower out of its leader's ISR (also run by the timer). */
  maybeShrinkIsrs(): void {
    const lagTimeMsMax = this.#o.lagTimeMsMax
    if (lagTimeMsMax === null) return
    for (const p of this.#o.hosted.partitions()) {
      const change = p.maybeShrinkIsr(lagTimeMsMax)
      if (change !== null) {
        this.#o.log(
          'info',
          `partition ${p.topic}-${p.partition}: shrinking ISR ${p.isr.join(',')} to ${change.isr.join(',')}`,
        )
        this.#submit(p, change)
      }
    }
  }

  /** A follower's fetch of `p` succeeded: it joins the ISR when it caught up. */
  maybeExpandIsr(p: Partition, replicaId: BrokerId): void {
    if (this.#o.alterPartition === null) return
    const change = p.maybeExpandIsr(replicaId, this.#eligible)
    if (change !== null) {
      this.#o.log(
        'info',
        `partition ${p.topic}-${p.partition}: expanding ISR ${p.isr.join(',')} to ${change.isr.join(',')}`,
      )
      this.#submit(p, change)
    }
  }

  /** `p` (partition `key`) leads now: after an unclean election it reports its recovery done. */
  maybeCompleteRecovery(p: Partition, key: string): void {
    const recovered = this.#o.alterPartition === null ? null : p.maybeCompleteRecovery()
    if (recovered !== null) {
      this.#o.log('info', `partition ${key}: elected uncleanly; reporting its recovery done`)
      this.#submit(p, recovered)
    }
  }

  #submit(p: Partition, change: NonNullable<Partition['pendingIsrChange']>): void {
    // The ISR before the change: by the answer the committed change may have reached the partition.
    const shrinks = !change.expand && change.isr.length < p.isr.length
    this.#o.alterPartition?.submit({
      topic: p.topic,
      topicId: p.topicId,
      partition: p.partition,
      change,
      wanted: () => p.pendingIsrChange === change && this.#o.hosted.getPartition(p.topic, p.partition) === p,
      answer: (a) => {
        if (a.errorCode === ErrorCode.None) {
          if (change.expand) this.#o.totals.isrExpands++
          else if (shrinks) this.#o.totals.isrShrinks++
        }
        p.onIsrChangeAnswer(change, a)
      },
    })
  }
}

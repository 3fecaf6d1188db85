/**
 * Producer ids for idempotent producers, handed out from blocks the controller allocates
 * (AllocateProducerIds), as Kafka's RPCProducerIdManager: the next block is fetched once 90% of the
 * current one is used, so InitProducerId rarely waits for the controller.
 */
import { ErrorCode } from '../protocol/index.ts'

export interface ProducerIdBlock {
  /** The first id of the block. */
  readonly start: bigint
  readonly length: number
}

/** Asks the controller for the next block; a refusal is its error code. */
export type AllocateProducerIdBlock = () => Promise<ProducerIdBlock | { readonly errorCode: ErrorCode }>

/** Fetch the next block once this fraction of the current one is left (Kafka: 10%). */
const PREFETCH_REMAINING_FRACTION = 0.1
/** Blocks fetched for one call at most before giving up (a block is never empty, so one suffices). */
const BLOCK_FETCHES_PER_CALL_MAX = 2

export class ProducerIdManager {
  readonly #allocate: AllocateProducerIdBlock
  #next = 0n
  #end = 0n
  #length = 0
  #prefetched: ProducerIdBlock | null = null
  #fetching: Promise<ProducerIdBlock | { readonly errorCode: ErrorCode }> | null = null

  constructor(allocate: AllocateProducerIdBlock) {
    this.#allocate = allocate
  }

  /**
   * The next unused producer id. When no block could be had (the controller refused or could not be
   * reached), COORDINATOR_LOAD_IN_PROGRESS, which producers retry, as Kafka's RPCProducerIdManager.
   */
  async generate(): Promise<{ readonly producerId: bigint } | { readonly errorCode: ErrorCode }> {
    for (let fetches = 0; ; ) {
      if (this.#next < this.#end) {
        const producerId = this.#next++
        this.#maybePrefetch()
        return { producerId }
      }
      if (this.#prefetched !== null) {
        this.#use(this.#prefetched)
        this.#prefetched = null
        continue
      }
      if (fetches++ >= BLOCK_FETCHES_PER_CALL_MAX) return { errorCode: ErrorCode.CoordinatorLoadInProgress }
      const r = await this.#fetchBlock()
      if ('errorCode' in r) return { errorCode: ErrorCode.CoordinatorLoadInProgress }
    }
  }

  #use(block: ProducerIdBlock): void {
    this.#next = block.start
    this.#end = block.start + BigInt(block.length)
    this.#length = block.length
  }

  #maybePrefetch(): void {
    if (this.#prefetched !== null || this.#fetching !== null) return
    if (Number(this.#end - this.#next) > this.#length * PREFETCH_REMAINING_FRACTION) return
    void this.#fetchBlock()
  }

  /** One allocation in flight at a time; its block waits in `#prefetched` until needed. */
  #fetchBlock(): Promise<ProducerIdBlock | { readonly errorCode: ErrorCode }> {
    this.#fetching ??= this.#allocate()
      .then(
        (r): ProducerIdBlock | { readonly errorCode: ErrorCode } => {
          if ('errorCode' in r) return r
          if (r.length <= 0) return { errorCode: ErrorCode.UnknownServerError }
          this.#prefetched = r
          return r
        },
        () => ({ errorCode: ErrorCode.CoordinatorLoadInProgress }),
      )
      .finally(() => {
        this.#fetching = null
      })
    return this.#fetching
  }
}

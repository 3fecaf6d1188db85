/**
 * The Random port. Every module outside io/ draws randomness through a `Random`, so a simulation
 * can run on a `SeededRandom` and a failing seed replays exactly. Not for secrets.
 */
import { randomFillSync } from 'node:crypto'
import { assert } from '../model/index.ts'

export interface Random {
  /** A uniform integer in [0, 2^32). */
  nextU32(): number
  /** A uniform float in [0, 1) with 53 random bits. */
  nextFloat(): number
  /**
   * A uniform integer in [0, exclusiveMax), without modulo bias. `exclusiveMax` is an integer in
   * [1, 2^53]. Example: `random.int(6) + 1` rolls a die.
   */
  int(exclusiveMax: number): number
}

const TWO_POW_32 = 2 ** 32
const TWO_POW_53 = 2 ** 53

/** 53 random bits from two draws: the top 21 bits of one and all 32 of the next. */
function nextU53(next: () => number): number {
  return (next() >>> 11) * TWO_POW_32 + next()
}

function floatFrom(next: () => number): number {
  return nextU53(next) / TWO_POW_53
}

/**
 * Rejection sampling: draw from a range that is a whole multiple of `exclusiveMax`, so every result
 * is equally likely. Fewer than two draws are expected, whatever `exclusiveMax` is.
 */
function intFrom(next: () => number, exclusiveMax: number): number {
  assert(
    Number.isInteger(exclusiveMax) && exclusiveMax >= 1 && exclusiveMax <= TWO_POW_53,
    `Random.int: exclusiveMax must be an integer in [1, 2^53], got ${exclusiveMax}`,
  )
  if (exclusiveMax <= TWO_POW_32) {
    const limit = TWO_POW_32 - (TWO_POW_32 % exclusiveMax)
    for (;;) {
      const x = next()
      if (x < limit) return x % exclusiveMax
    }
  }
  const limit = TWO_POW_53 - (TWO_POW_53 % exclusiveMax)
  for (;;) {
    const x = nextU53(next)
    if (x < limit) return x % exclusiveMax
  }
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k))
}

const MASK_64 = (1n << 64n) - 1n

/** SplitMix64 (Steele, Lea, Flood 2014), as Vigna's reference code uses it to seed xoshiro. */
function splitMix64(state: { x: bigint }): bigint {
  state.x = (state.x + 0x9e3779b97f4a7c15n) & MASK_64
  let z = state.x
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK_64
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK_64
  return z ^ (z >> 31n)
}

/**
 * A deterministic PRNG: xoshiro128** 1.1 (Blackman and Vigna, https://prng.di.unimi.it/), 128 bits
 * of state, period 2^128 - 1. The state is filled from the seed by two SplitMix64 outputs, as the
 * authors recommend (low half first): `new SeededRandom(seed)` gives the same sequence on every
 * machine, so a simulation prints its seed and replays with it. Distinct seeds give independent
 * looking streams, so one seed per simulated node (`seed + nodeId`) is fine.
 */
export class SeededRandom implements Random {
  #s0 = 0
  #s1 = 0
  #s2 = 0
  #s3 = 0

  /** `seed`: an integer, a safe-integer number or any bigint (taken modulo 2^64). */
  constructor(seed: number | bigint) {
    if (typeof seed === 'number') {
      assert(Number.isSafeInteger(seed), `SeededRandom: seed must be a safe integer, got ${seed}`)
    }
    const state = { x: BigInt.asUintN(64, BigInt(seed)) }
    const a = splitMix64(state)
    const b = splitMix64(state)
    // Two consecutive SplitMix64 outputs are never both zero, so the state is never all zeros.
    this.#setState([Number(a & 0xffffffffn), Number(a >> 32n), Number(b & 0xffffffffn), Number(b >> 32n)])
  }

  /** Resume from a snapshot taken with `state()`. At least one word must be non-zero. */
  static fromState(state: readonly [number, number, number, number]): SeededRandom {
    const random = new SeededRandom(0)
    random.#setState(state)
    return random
  }

  /** The four 32-bit words of state, to snapshot and later resume with `fromState`. */
  state(): [number, number, number, number] {
    return [this.#s0, this.#s1, this.#s2, this.#s3]
  }

  nextU32(): number {
    const s1 = this.#s1
    const result = Math.imul(rotl(Math.imul(s1, 5), 7), 9) >>> 0
    const t = s1 << 9
    this.#s2 ^= this.#s0
    this.#s3 ^= s1
    this.#s1 ^= this.#s2
    this.#s0 ^= this.#s3
    this.#s2 ^= t
    this.#s3 = rotl(this.#s3, 11)
    return result
  }

  nextFloat(): number {
    return floatFrom(() => this.nextU32())
  }

  int(exclusiveMax: number): number {
    return intFrom(() => this.nextU32(), exclusiveMax)
  }

  #setState(state: readonly [number, number, number, number]): void {
    for (const word of state) {
      assert(Number.isInteger(word) && word >= 0 && word < TWO_POW_32, 'SeededRandom: state words are uint32')
    }
    assert(
      state.some((word) => word !== 0),
      'SeededRandom: state must not be all zeros',
    )
    this.#s0 = state[0] | 0
    this.#s1 = state[1] | 0
    this.#s2 = state[2] | 0
    this.#s3 = state[3] | 0
  }
}

/** Draws from the OS CSPRNG in batches, so one draw is not one system call. */
const SYSTEM_BATCH_U32S = 256
const systemBatch = new Uint32Array(SYSTEM_BATCH_U32S)
let systemBatchNext = SYSTEM_BATCH_U32S

function systemNextU32(): number {
  if (systemBatchNext === SYSTEM_BATCH_U32S) {
    randomFillSync(systemBatch)
    systemBatchNext = 0
  }
  return systemBatch[systemBatchNext++]!
}

/** Unpredictable randomness from the OS (`crypto.randomFillSync`), for production jitter and ids. */
export const systemRandom: Random = {
  nextU32: systemNextU32,
  nextFloat: () => floatFrom(systemNextU32),
  int: (exclusiveMax) => intFrom(systemNextU32, exclusiveMax),
}

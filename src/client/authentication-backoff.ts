/**
 * A node's own connections refused for their credentials (SaslAuthenticationError) or their TLS
 * (SslAuthenticationError): no new attempt to that peer for `backoffMs`, and one error line per
 * streak of failures, not one per retry. Kafka's clients back off the same way after an
 * authentication failure; without it a wrong inter-broker password would redo TLS handshakes and
 * SASL exchanges as fast as raft and the fetchers retry.
 */
import type { Clock } from '../io/index.ts'
import { type ConnectionError, SaslAuthenticationError, SslAuthenticationError } from './kafka-connection.ts'

export function isAuthenticationError(e: unknown): e is SaslAuthenticationError | SslAuthenticationError {
  return e instanceof SaslAuthenticationError || e instanceof SslAuthenticationError
}

/** What `reconnect.backoff.max.ms` defaults to: the wait after a refused authentication. */
export const AUTHENTICATION_BACKOFF_MS = 1000

export class AuthenticationBackoff {
  readonly #clock: Clock
  readonly #log: (level: 'info' | 'error', message: string) => void
  readonly #backoffMs: number
  readonly #failed = new Map<string, { readonly error: ConnectionError; readonly untilMs: number }>()

  constructor(
    clock: Clock,
    log: (level: 'info' | 'error', message: string) => void,
    backoffMs = AUTHENTICATION_BACKOFF_MS,
  ) {
    this.#clock = clock
    this.#log = log
    this.#backoffMs = backoffMs
  }

  /** Throws the last refusal of `peer` while its backoff runs. */
  check(peer: string): void {
    const f = this.#failed.get(peer)
    if (f !== undefined && this.#clock.monotonicMs() < f.untilMs) throw f.error
  }

  /** A connection to `peer` failed with `e`: an authentication error starts (or extends) a backoff. */
  failed(peer: string, e: unknown): void {
    if (!isAuthenticationError(e)) return
    const previous = this.#failed.get(peer)
    if (previous === undefined || previous.error.message !== e.message) this.#log('error', e.message)
    this.#failed.set(peer, { error: e, untilMs: this.#clock.monotonicMs() + this.#backoffMs })
  }

  /** A connection to `peer` authenticated: the streak ends. */
  succeeded(peer: string): void {
    if (this.#failed.delete(peer)) this.#log('info', `${peer}: authenticated again`)
  }
}

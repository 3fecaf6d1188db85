/**
 * A node's connection limits from its configs, by Kafka's names: `max.connections` (broker-wide,
 * and per listener as `listener.name.<l>.max.connections`), `max.connections.per.ip` and
 * `max.connections.per.ip.overrides`, whose host names are resolved once, at start (Kafka resolves
 * them when the config is read).
 */
import { lookup } from 'node:dns/promises'
import { type ConfigLayer, type EffectiveConfig, parseConnectionsPerIpOverrides } from '../config/index.ts'
import { javaHostAddress } from '../security/index.ts'
import { ConnectionQuotas } from '../server/index.ts'

export class ConnectionLimitsError extends Error {
  override name = 'ConnectionLimitsError'
}

/**
 * The counts one socket server's listeners share; `protectedListener` is the inter-broker one.
 * Refuses, as Kafka's KafkaConfig, a per-IP limit of 0 without overrides and a failed-authentication
 * delay that the idle timeout would cut short.
 */
export async function connectionQuotas(
  effective: EffectiveConfig,
  protectedListener: string | null,
): Promise<ConnectionQuotas> {
  const failedDelayMs = effective.int('connection.failed.authentication.delay.ms')
  const idleMs = effective.long('connections.max.idle.ms')
  if (idleMs >= 0 && failedDelayMs >= idleMs) {
    throw new ConnectionLimitsError(
      `connection.failed.authentication.delay.ms=${failedDelayMs} should always be less than connections.max.idle.ms=${idleMs} to prevent failed authentication responses from timing out`,
    )
  }
  const perIp = effective.int('max.connections.per.ip')
  const overrides =
    parseConnectionsPerIpOverrides(effective.string('max.connections.per.ip.overrides') ?? '') ?? new Map()
  if (perIp === 0 && overrides.size === 0) {
    throw new ConnectionLimitsError(
      'max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set.',
    )
  }
  const byAddress = new Map<string, number>()
  for (const [host, count] of overrides) {
    let addresses: Array<{ address: string }>
    try {
      addresses = await lookup(host, { all: true })
    } catch {
      throw new ConnectionLimitsError(`max.connections.per.ip.overrides: unknown host ${host}`)
    }
    for (const { address } of addresses) byAddress.set(javaHostAddress(address), count)
  }
  return new ConnectionQuotas({
    connectionsMax: effective.int('max.connections'),
    connectionsPerIpMax: perIp,
    connectionsPerIpOverrides: byAddress,
    protectedListener,
  })
}

/** A listener's `max.connections`: `listener.name.<l>.max.connections`, else the broker-wide value. */
export function listenerConnectionsMax(
  listenerName: string,
  staticBroker: ConfigLayer,
  effective: EffectiveConfig,
): number {
  const key = `listener.name.${listenerName.toLowerCase()}.max.connections`
  const text = staticBroker.get(key)
  if (text === undefined) return effective.int('max.connections')
  const value = /^\s*\d{1,10}\s*$/.test(text) ? Number(text) : Number.NaN
  if (!(value >= 0 && value <= 2147483647)) {
    throw new ConnectionLimitsError(`${key}: Invalid value ${text}: Value must be at least 0`)
  }
  return value
}

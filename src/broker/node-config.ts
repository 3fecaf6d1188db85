/**
 * A node's identity and wiring, read from its broker configs by Kafka's names: roles, node id,
 * voters, listeners and their advertised addresses, log directories. Refuses inconsistent setups.
 */
import { type EffectiveConfig, parseHostPort } from '../config/index.ts'
import { BrokerId } from '../model/index.ts'

export interface ListenerSpec {
  /** The listener name, e.g. PLAINTEXT or CONTROLLER. */
  readonly name: string
  readonly host: string
  readonly port: number
  /** Kafka's SecurityProtocol id: 0 PLAINTEXT, 1 SSL, 2 SASL_PLAINTEXT, 3 SASL_SSL. */
  readonly securityProtocol: number
  /** Its name, as `listener.security.protocol.map` gives it. */
  readonly protocolName: SecurityProtocolName
}

export type SecurityProtocolName = 'PLAINTEXT' | 'SSL' | 'SASL_PLAINTEXT' | 'SASL_SSL'

export interface VoterSpec {
  readonly id: BrokerId
  readonly host: string
  readonly port: number
}

export interface NodeConfig {
  readonly nodeId: BrokerId
  readonly broker: boolean
  readonly controller: boolean
  readonly voters: readonly VoterSpec[]
  /** Listeners this node binds. */
  readonly listeners: readonly ListenerSpec[]
  /** What other nodes and clients are told, by listener name (defaults to `listeners`). */
  readonly advertised: readonly ListenerSpec[]
  readonly controllerListenerNames: readonly string[]
  /**
   * The security protocol of the first controller listener, which brokers and controllers connect
   * to (`listener.security.protocol.map`, PLAINTEXT when it does not name it), bound here or not.
   */
  readonly controllerListenerProtocol: SecurityProtocolName
  readonly logDirs: readonly string[]
  readonly metadataLogDir: string
  readonly rack: string | null
  /**
   * The listener replica fetchers connect to on other brokers (`inter.broker.listener.name`, else
   * the listener named by `security.inter.broker.protocol` when any broker listener is secured);
   * null: the leader's first registered endpoint.
   */
  readonly interBrokerListenerName: string | null
}

export class NodeConfigError extends Error {
  override name = 'NodeConfigError'
}

const SECURITY_PROTOCOLS: Readonly<Record<SecurityProtocolName, number>> = {
  PLAINTEXT: 0,
  SSL: 1,
  SASL_PLAINTEXT: 2,
  SASL_SSL: 3,
}

function isSecurityProtocolName(name: string): name is SecurityProtocolName {
  return Object.hasOwn(SECURITY_PROTOCOLS, name)
}

/** `NAME://host:port,...` as listeners; the security protocol comes from the map or the name. */
export function parseListeners(text: string, protocolMap: ReadonlyMap<string, string>): ListenerSpec[] {
  const out: ListenerSpec[] = []
  for (const item of text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')) {
    const m = /^([A-Za-z0-9_]+):\/\/(.*)$/.exec(item)
    if (m === null) throw new NodeConfigError(`listener ${item} is not NAME://host:port`)
    const name = m[1]!.toUpperCase()
    const hp = parseHostPort(m[2]!)
    if (hp === undefined) throw new NodeConfigError(`listener ${item}: ${m[2]} is not host:port`)
    const protocol = protocolMap.get(name) ?? name
    if (!isSecurityProtocolName(protocol))
      throw new NodeConfigError(`listener ${name}: unknown security protocol ${protocol}`)
    out.push({
      name,
      host: hp.host === '' ? '0.0.0.0' : hp.host,
      port: hp.port,
      securityProtocol: SECURITY_PROTOCOLS[protocol],
      protocolName: protocol,
    })
  }
  return out
}

/** A comma-separated key, whether the catalog types it as a list or a string. */
function listOf(c: EffectiveConfig, name: string): string[] {
  if (c.get(name).def.type === 'list') return [...c.list(name)]
  return (c.string(name) ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
}

export function nodeConfig(c: EffectiveConfig): NodeConfig {
  const roles = listOf(c, 'process.roles')
  const broker = roles.includes('broker')
  const controller = roles.includes('controller')
  if (!broker && !controller) throw new NodeConfigError('process.roles must name broker, controller or both')
  const nodeId = BrokerId(c.int('node.id'))
  const protocolMap = new Map<string, string>()
  for (const pair of (c.string('listener.security.protocol.map') ?? '').split(',')) {
    const [k, v] = pair.split(':')
    if (k !== undefined && v !== undefined) protocolMap.set(k.trim().toUpperCase(), v.trim().toUpperCase())
  }
  const controllerListenerNames = listOf(c, 'controller.listener.names').map((n) => n.toUpperCase())
  // As Kafka: a controller listener the map does not name is PLAINTEXT.
  for (const name of controllerListenerNames) if (!protocolMap.has(name)) protocolMap.set(name, 'PLAINTEXT')
  const listeners = parseListeners(c.string('listeners') ?? '', protocolMap)
  const advertisedText = c.string('advertised.listeners')
  const advertisedList =
    advertisedText === null || advertisedText === '' ? [] : parseListeners(advertisedText, protocolMap)
  const advertised = listeners.map((l) => {
    const a = advertisedList.find((x) => x.name === l.name)
    if (a !== undefined) return a
    // A wildcard bind address cannot be advertised: tell clients the loopback address instead.
    return l.host === '0.0.0.0' || l.host === '::' ? { ...l, host: '127.0.0.1' } : l
  })
  const voters: VoterSpec[] = []
  for (const item of listOf(c, 'controller.quorum.voters')) {
    const m = /^(\d+)@(.+)$/.exec(item)
    const hp = m === null ? undefined : parseHostPort(m[2]!)
    if (m === null || hp === undefined)
      throw new NodeConfigError(`controller.quorum.voters: ${item} is not id@host:port`)
    voters.push({ id: BrokerId(Number(m[1])), host: hp.host, port: hp.port })
  }
  if (voters.length === 0) throw new NodeConfigError('controller.quorum.voters names no voter')
  if (controller) {
    if (!voters.some((v) => v.id === nodeId)) {
      throw new NodeConfigError(
        `node ${nodeId} has the controller role but is not in controller.quorum.voters`,
      )
    }
    if (!listeners.some((l) => controllerListenerNames.includes(l.name))) {
      throw new NodeConfigError(
        `a controller needs a listener named in controller.listener.names (${controllerListenerNames.join(',')})`,
      )
    }
  }
  if (broker && !listeners.some((l) => !controllerListenerNames.includes(l.name))) {
    throw new NodeConfigError('a broker needs a listener that is not a controller listener')
  }
  const controllerProtocol = protocolMap.get(controllerListenerNames[0] ?? '') ?? 'PLAINTEXT'
  if (!isSecurityProtocolName(controllerProtocol)) {
    throw new NodeConfigError(
      `listener ${controllerListenerNames[0]}: unknown security protocol ${controllerProtocol}`,
    )
  }
  const interBrokerListenerName = broker ? interBrokerListener(c, listeners, controllerListenerNames) : null
  const logDirsText = c.string('log.dirs')
  const logDirs = (logDirsText ?? c.string('log.dir') ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
  if (logDirs.length === 0) throw new NodeConfigError('log.dirs names no directory')
  return {
    nodeId,
    broker,
    controller,
    voters,
    listeners,
    advertised,
    controllerListenerNames,
    controllerListenerProtocol: controllerProtocol,
    logDirs,
    metadataLogDir: c.string('metadata.log.dir') ?? logDirs[0]!,
    rack: c.string('broker.rack'),
    interBrokerListenerName,
  }
}

/**
 * The inter-broker listener, as Kafka: `inter.broker.listener.name`, else the listener named as
 * `security.inter.broker.protocol`; replica fetchers connect to it with its security protocol. Where every broker listener is PLAINTEXT and the key is unset,
 * null (the leader's first endpoint), as before secured listeners existed.
 */
function interBrokerListener(
  c: EffectiveConfig,
  listeners: readonly ListenerSpec[],
  controllerListenerNames: readonly string[],
): string | null {
  const named = c.string('inter.broker.listener.name')
  const brokerListeners = listeners.filter((l) => !controllerListenerNames.includes(l.name))
  const secured = brokerListeners.some((l) => l.protocolName !== 'PLAINTEXT')
  if ((named === null || named === '') && !secured) return null
  const name =
    named === null || named === '' ? (c.string('security.inter.broker.protocol') ?? 'PLAINTEXT') : named
  const listener = brokerListeners.find((l) => l.name === name.toUpperCase())
  if (listener === undefined) {
    throw new NodeConfigError(
      `inter.broker.listener.name must be a listener name defined in advertised.listeners: ${name} is not a broker listener`,
    )
  }
  return listener.name
}

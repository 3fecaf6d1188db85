/**
 * One network namespace per node, made with `ip netns` (needs root and iproute2): every node gets a
 * veth into a bridge in the root namespace, its own address on one /24, and its own routing table.
 * Clients stay in the root namespace and reach the nodes over the bridge; nodes reach each other over
 * the same bridge. A partition between two nodes is a `blackhole` route to the other's address inside
 * each of the two namespaces: packets vanish silently, as on a real network split (no RST, no
 * ICMP), so TCP connections hang until their timeouts. Healing deletes the routes.
 *
 * Names carry the creating process id (`wf<pid>...`), so concurrent runs never clash and a later
 * run removes what a killed run left behind. Everything is removed on `destroy()` and, as a last
 * resort, from a process 'exit' handler.
 */
import { execFileSync } from 'node:child_process'

function ip(...args: string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
}

function tryIp(...args: string[]): void {
  try {
    ip(...args)
  } catch {
    // already gone
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Removes namespaces and bridges left by harness runs whose process is gone. */
export function removeStale(): void {
  let names: string[] = []
  try {
    names = ip('netns', 'list')
      .split('\n')
      .map((l) => l.split(' ')[0] ?? '')
  } catch {
    return
  }
  const dead = new Set<string>()
  for (const name of names) {
    const m = /^wf(\d+)n\d+$/.exec(name)
    if (m !== null && !alive(Number(m[1]))) {
      tryIp('netns', 'del', name)
      dead.add(m[1]!)
    }
  }
  for (const pid of dead) tryIp('link', 'del', `wf${pid}b`)
}

/** True when this machine lets us make namespaces (root, iproute2, netns support). */
export function netnsAvailable(): boolean {
  if (process.getuid?.() !== 0) return false
  const probe = `wf${process.pid}probe`
  try {
    ip('netns', 'add', probe)
    ip('netns', 'del', probe)
    return true
  } catch {
    tryIp('netns', 'del', probe)
    return false
  }
}

export class NetnsNetwork {
  readonly nodes: number
  /** `10.<a>.<b>.`: the /24 the bridge and nodes live on. */
  readonly #prefix: string
  readonly #tag: string
  readonly #blocked = new Set<string>()
  #destroyed = false
  readonly #onExit = () => this.destroy()

  private constructor(nodes: number, prefix: string, tag: string) {
    this.nodes = nodes
    this.#prefix = prefix
    this.#tag = tag
  }

  /** Makes the bridge and one namespace per node (ids 1..nodes). */
  static create(nodes: number): NetnsNetwork {
    removeStale()
    const tag = `wf${process.pid}`
    const pid = process.pid
    const net = new NetnsNetwork(nodes, `10.${200 + ((pid >> 8) % 50)}.${pid % 250}.`, tag)
    process.on('exit', net.#onExit)
    try {
      net.#setUp()
    } catch (e) {
      net.destroy()
      throw e
    }
    return net
  }

  #setUp(): void {
    const bridge = `${this.#tag}b`
    ip('link', 'add', bridge, 'type', 'bridge')
    ip('addr', 'add', `${this.#prefix}1/24`, 'dev', bridge)
    ip('link', 'set', bridge, 'up')
    for (let id = 1; id <= this.nodes; id++) {
      const ns = this.namespace(id)
      const outside = `${this.#tag}v${id}`
      ip('netns', 'add', ns)
      ip('link', 'add', outside, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns)
      ip('link', 'set', outside, 'master', bridge)
      ip('link', 'set', outside, 'up')
      ip('-n', ns, 'addr', 'add', `${this.address(id)}/24`, 'dev', 'eth0')
      ip('-n', ns, 'link', 'set', 'eth0', 'up')
      ip('-n', ns, 'link', 'set', 'lo', 'up')
    }
  }

  /** The namespace node `id` runs in. */
  namespace(id: number): string {
    return `${this.#tag}n${id}`
  }

  /** Node `id`'s address. */
  address(id: number): string {
    return `${this.#prefix}${10 + id}`
  }

  /** The command prefix that runs a program inside node `id`'s namespace. */
  prefix(id: number): string[] {
    return ['ip', 'netns', 'exec', this.namespace(id)]
  }

  /** Cuts the link between nodes a and b, both ways. */
  cut(a: number, b: number): void {
    if (a === b) return
    const key = a < b ? `${a}-${b}` : `${b}-${a}`
    if (this.#blocked.has(key)) return
    this.#blocked.add(key)
    ip('-n', this.namespace(a), 'route', 'add', 'blackhole', `${this.address(b)}/32`)
    ip('-n', this.namespace(b), 'route', 'add', 'blackhole', `${this.address(a)}/32`)
  }

  /** Splits the nodes into the given sides: every link between two sides is cut. */
  split(sides: readonly (readonly number[])[]): void {
    for (let i = 0; i < sides.length; i++)
      for (let j = i + 1; j < sides.length; j++)
        for (const a of sides[i]!) for (const b of sides[j]!) this.cut(a, b)
  }

  /** Restores every cut link. */
  heal(): void {
    for (const key of this.#blocked) {
      const [a, b] = key.split('-').map(Number) as [number, number]
      tryIp('-n', this.namespace(a), 'route', 'del', 'blackhole', `${this.address(b)}/32`)
      tryIp('-n', this.namespace(b), 'route', 'del', 'blackhole', `${this.address(a)}/32`)
    }
    this.#blocked.clear()
  }

  /** The links cut right now, as "a-b". */
  get cuts(): string[] {
    return [...this.#blocked]
  }

  /** Removes every namespace and the bridge (idempotent). */
  destroy(): void {
    if (this.#destroyed) return
    this.#destroyed = true
    process.off('exit', this.#onExit)
    for (let id = 1; id <= this.nodes; id++) tryIp('netns', 'del', this.namespace(id))
    tryIp('link', 'del', `${this.#tag}b`)
  }
}

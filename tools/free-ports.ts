/** Free loopback ports for tests, tools and benchmarks that start servers. */
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'

/**
 * Ports nobody listens on right now (bound then released), chosen at random below the kernel's
 * ephemeral range. A port the kernel hands out for `listen(0)` comes from that range, the same one
 * outgoing connections take their source ports from: between our release and the node's bind, a
 * client's connection could take it (EADDRINUSE, seen in CI). Below the range only a listener can.
 */
export async function freePorts(n: number): Promise<number[]> {
  const low = 10_000
  const high = Math.max(low + 1000, ephemeralLow() - 1)
  const ports: number[] = []
  while (ports.length < n) {
    const port = low + Math.floor(Math.random() * (high - low))
    if (ports.includes(port)) continue
    if (await canListen(port)) ports.push(port)
  }
  return ports
}

function ephemeralLow(): number {
  try {
    const [first] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)
    const n = Number(first)
    return Number.isInteger(n) && n > 11_000 ? n : 32_768
  } catch {
    return 32_768
  }
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer()
    s.once('error', () => resolve(false))
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)))
  })
}

/**
 * The client address as Kafka's ACLs name it: Java's `InetAddress.getHostAddress()`. Node prints
 * IPv6 compressed (`::1`) and IPv4-mapped addresses as IPv6 (`::ffff:10.0.0.1`); Java prints every
 * IPv6 group, lowercase without leading zeros (`0:0:0:0:0:0:0:1`), keeps a zone (`%eth0`), and
 * takes an IPv4-mapped address as the IPv4 address itself. An ACL's host matches this text exactly.
 */

const IPV4 = /^\d{1,3}(?:\.\d{1,3}){3}$/
const HEX_GROUP = /^[0-9a-fA-F]{1,4}$/

/** Java's getHostAddress() of the address Node reports (`socket.remoteAddress`); other text as given. */
export function javaHostAddress(address: string): string {
  if (!address.includes(':')) return address
  const zoneAt = address.indexOf('%')
  const zone = zoneAt < 0 ? '' : address.slice(zoneAt)
  const groups = ipv6Groups(zoneAt < 0 ? address : address.slice(0, zoneAt))
  if (groups === null) return address
  if (isIpv4Mapped(groups))
    return `${groups[6]! >> 8}.${groups[6]! & 0xff}.${groups[7]! >> 8}.${groups[7]! & 0xff}`
  return groups.map((group) => group.toString(16)).join(':') + zone
}

function isIpv4Mapped(groups: readonly number[]): boolean {
  return groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff
}

/** The eight 16-bit groups of an IPv6 address in text (`::` and a dotted IPv4 tail allowed), or null. */
function ipv6Groups(text: string): number[] | null {
  const halves = text.split('::')
  if (halves.length > 2) return null
  const head = parseGroups(halves[0]!)
  const tail = halves.length === 2 ? parseGroups(halves[1]!) : []
  if (head === null || tail === null) return null
  const missing = 8 - head.length - tail.length
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null
  return [...head, ...new Array<number>(halves.length === 2 ? missing : 0).fill(0), ...tail]
}

function parseGroups(text: string): number[] | null {
  if (text === '') return []
  const parts = text.split(':')
  const groups: number[] = []
  for (const [i, part] of parts.entries()) {
    if (i === parts.length - 1 && IPV4.test(part)) {
      const bytes = part.split('.').map(Number)
      if (bytes.some((byte) => byte > 255)) return null
      groups.push((bytes[0]! << 8) | bytes[1]!, (bytes[2]! << 8) | bytes[3]!)
    } else if (HEX_GROUP.test(part)) {
      groups.push(Number.parseInt(part, 16))
    } else {
      return null
    }
  }
  return groups
}

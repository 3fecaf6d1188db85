/**
 * The distinguished name of a TLS client certificate as Kafka sees it: Java's
 * `X500Principal.getName()` (RFC 2253), which `ssl.principal.mapping.rules` read. Java prints the
 * relative names last first (`CN=alice,OU=eng,O=acme,C=US` for a subject written C, O, OU, CN),
 * joins the values of a multi-valued one with `+`, names CN, C, L, ST, O, OU, STREET, DC and UID
 * by keyword and every other attribute by its dotted OID with the value as `#` and the hex of its
 * DER encoding, and escapes `, = + < > # ; " \` with a backslash, NUL as `\00`, and leading and
 * trailing spaces.
 *
 * `x500NameOfCertificate` reads the subject from the certificate's DER (Node's
 * `getPeerCertificate().raw`), which keeps the order and string types Java prints from; bounded by
 * the bytes given.
 */

/** The attributes Java's RFC 2253 form names by keyword, by OID. */
const RFC2253_KEYWORDS: ReadonlyMap<string, string> = new Map([
  ['2.5.4.3', 'CN'],
  ['2.5.4.6', 'C'],
  ['2.5.4.7', 'L'],
  ['2.5.4.8', 'ST'],
  ['2.5.4.10', 'O'],
  ['2.5.4.11', 'OU'],
  ['2.5.4.9', 'STREET'],
  ['0.9.2342.19200300.100.1.25', 'DC'],
  ['0.9.2342.19200300.100.1.1', 'UID'],
])

const TAG_SEQUENCE = 0x30
const TAG_SET = 0x31
const TAG_OID = 0x06
/** The string types Java prints as text (AVA.isDerString, not canonical). */
const TAG_UTF8 = 0x0c
const TAG_PRINTABLE = 0x13
const TAG_T61 = 0x14
const TAG_IA5 = 0x16
const TAG_GENERAL = 0x1b
const TAG_BMP = 0x1e

/** A certificate or name whose DER does not parse. */
export class X500NameError extends Error {
  override name = 'X500NameError'
}

interface Tlv {
  readonly tag: number
  /** The whole element, header included. */
  readonly start: number
  readonly contentStart: number
  readonly end: number
}

/** One DER element at `at`, within `[at, limit)`. */
function readTlv(der: Uint8Array, at: number, limit: number): Tlv {
  if (at + 2 > limit) throw new X500NameError('DER element truncated')
  const tag = der[at]!
  let length = der[at + 1]!
  let contentStart = at + 2
  if (length & 0x80) {
    const lengthBytes = length & 0x7f
    if (lengthBytes === 0 || lengthBytes > 4 || contentStart + lengthBytes > limit) {
      throw new X500NameError('DER length unsupported or truncated')
    }
    length = 0
    for (let i = 0; i < lengthBytes; i++) length = length * 256 + der[contentStart + i]!
    contentStart += lengthBytes
  }
  const end = contentStart + length
  if (end > limit) throw new X500NameError('DER element longer than its container')
  return { tag, start: at, contentStart, end }
}

function expectTag(tlv: Tlv, tag: number, what: string): Tlv {
  if (tlv.tag !== tag)
    throw new X500NameError(`expected ${what} (tag 0x${tag.toString(16)}), got 0x${tlv.tag.toString(16)}`)
  return tlv
}

/** The children of a constructed element. */
function children(der: Uint8Array, parent: Tlv): Tlv[] {
  const out: Tlv[] = []
  for (let at = parent.contentStart; at < parent.end; ) {
    const child = readTlv(der, at, parent.end)
    out.push(child)
    at = child.end
  }
  return out
}

/** The subject Name of a DER X.509 certificate, as its DER bytes. */
export function certificateSubject(certificate: Uint8Array): Uint8Array {
  const cert = expectTag(readTlv(certificate, 0, certificate.length), TAG_SEQUENCE, 'Certificate')
  const tbs = expectTag(
    children(certificate, cert)[0] ?? fail('empty Certificate'),
    TAG_SEQUENCE,
    'TBSCertificate',
  )
  const fields = children(certificate, tbs)
  const hasVersion = fields[0]?.tag === 0xa0
  // [version] serialNumber signature issuer validity subject
  const subject = fields[hasVersion ? 5 : 4] ?? fail('TBSCertificate has no subject')
  return certificate.subarray(expectTag(subject, TAG_SEQUENCE, 'subject Name').start, subject.end)
}

function fail(message: string): never {
  throw new X500NameError(message)
}

/** Java's X500Principal.getName() of a certificate's subject. */
export function x500NameOfCertificate(certificate: Uint8Array): string {
  return x500NameFromDer(certificateSubject(certificate))
}

/** Java's X500Principal.getName() (RFC 2253) of a DER Name. */
export function x500NameFromDer(name: Uint8Array): string {
  const sequence = expectTag(readTlv(name, 0, name.length), TAG_SEQUENCE, 'Name')
  const rdns = children(name, sequence).map((rdn) => {
    const avas = children(name, expectTag(rdn, TAG_SET, 'RelativeDistinguishedName'))
    return avas.map((ava) => avaText(name, expectTag(ava, TAG_SEQUENCE, 'AttributeTypeAndValue'))).join('+')
  })
  return rdns.reverse().join(',')
}

function avaText(der: Uint8Array, ava: Tlv): string {
  const [type, value] = children(der, ava)
  if (type === undefined || value === undefined) throw new X500NameError('AttributeTypeAndValue incomplete')
  const oid = decodeOid(der.subarray(expectTag(type, TAG_OID, 'attribute type').contentStart, type.end))
  const keyword = RFC2253_KEYWORDS.get(oid)
  const text =
    keyword === undefined ? null : decodeDerString(value.tag, der.subarray(value.contentStart, value.end))
  if (keyword === undefined || text === null)
    return `${keyword ?? oid}=#${hex(der.subarray(value.start, value.end))}`
  return `${keyword}=${escapeRfc2253(text)}`
}

function decodeOid(bytes: Uint8Array): string {
  const arcs: number[] = []
  let arc = 0
  for (const byte of bytes) {
    arc = arc * 128 + (byte & 0x7f)
    if ((byte & 0x80) === 0) {
      arcs.push(arc)
      arc = 0
    }
  }
  const first = arcs.shift() ?? 0
  const top = first < 80 ? Math.floor(first / 40) : 2
  return [top, first - top * 40, ...arcs].join('.')
}

/** The text of a DER string type Java prints as text, or null for any other type (printed as hex). */
function decodeDerString(tag: number, content: Uint8Array): string | null {
  switch (tag) {
    case TAG_UTF8:
      return new TextDecoder('utf-8').decode(content)
    case TAG_PRINTABLE:
    case TAG_IA5:
    case TAG_GENERAL:
      return Array.from(content, (byte) => (byte < 0x80 ? String.fromCharCode(byte) : '\ufffd')).join('')
    case TAG_T61:
      return new TextDecoder('latin1').decode(content)
    case TAG_BMP:
      return new TextDecoder('utf-16be').decode(content)
    default:
      return null
  }
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('')
}

const ESCAPEES = ',=+<>#;"\\'

/** Java's AVA escaping of a text value in RFC 2253: the escapees, NUL, then leading and trailing spaces. */
export function escapeRfc2253(value: string): string {
  let escaped = ''
  for (const char of value)
    escaped += ESCAPEES.includes(char) ? `\\${char}` : char === '\u0000' ? '\\00' : char
  const isSpace = (char: string) => char === ' ' || char === '\r'
  let lead = 0
  while (lead < escaped.length && isSpace(escaped[lead]!)) lead++
  let trail = escaped.length - 1
  while (trail >= 0 && isSpace(escaped[trail]!)) trail--
  let out = ''
  for (let i = 0; i < escaped.length; i++) out += i < lead || i > trail ? `\\${escaped[i]}` : escaped[i]
  return out
}

/** Node's short names (`getPeerCertificate().subject` keys) of the keyword attributes. */
const NODE_KEYWORDS: ReadonlySet<string> = new Set(['CN', 'C', 'L', 'ST', 'O', 'OU', 'street', 'DC', 'UID'])

/**
 * The RFC 2253 name of Node's subject object (`getPeerCertificate().subject`), for the keyword
 * attributes: the keys in reverse, each array's values in reverse. Lossy where the object is: it
 * groups repeated attributes under their first key and loses multi-valued names, and it drops
 * other attributes (use `x500NameOfCertificate` on `raw` for those).
 */
export function x500NameFromSubject(subject: Readonly<Record<string, string | readonly string[]>>): string {
  const parts: string[] = []
  for (const [key, value] of Object.entries(subject)) {
    if (!NODE_KEYWORDS.has(key)) continue
    const keyword = key === 'street' ? 'STREET' : key
    for (const text of typeof value === 'string' ? [value] : value)
      parts.push(`${keyword}=${escapeRfc2253(text)}`)
  }
  return parts.reverse().join(',')
}

/**
 * Kafka's principals: who a connection is, as `type:name` (`User:alice`). Kafka compares them by
 * type and name; an ACL names its principal as that text, and `super.users` lists them.
 */

/** A principal: its type (`User`, or a custom builder's) and its name. */
export interface KafkaPrincipal {
  readonly principalType: string
  readonly name: string
}

export const USER_PRINCIPAL_TYPE = 'User'

/** Who a connection is before or without authentication (PLAINTEXT, or TLS without a client certificate). */
export const ANONYMOUS_PRINCIPAL: KafkaPrincipal = { principalType: USER_PRINCIPAL_TYPE, name: 'ANONYMOUS' }

/** The principal an ACL names to apply to every principal (only of type User). */
export const WILDCARD_PRINCIPAL = 'User:*'

export function kafkaPrincipal(principalType: string, name: string): KafkaPrincipal {
  return { principalType, name }
}

/** A user principal: `User:<name>`, as the SASL mechanisms and the TLS mapping make them. */
export function userPrincipal(name: string): KafkaPrincipal {
  return kafkaPrincipal(USER_PRINCIPAL_TYPE, name)
}

/** `type:name`, Kafka's `KafkaPrincipal.toString()`: the form ACLs and `super.users` hold. */
export function formatPrincipal(principal: KafkaPrincipal): string {
  return `${principal.principalType}:${principal.name}`
}

/** A principal from `type:name`, split at the first colon; null without one or when empty. */
export function tryParsePrincipal(text: string): KafkaPrincipal | null {
  const colon = text.indexOf(':')
  return colon < 0 ? null : kafkaPrincipal(text.slice(0, colon), text.slice(colon + 1))
}

/** A principal from `type:name`, or Kafka's error (SecurityUtils.parseKafkaPrincipal) for text without a colon. */
export function parsePrincipal(text: string): KafkaPrincipal {
  const principal = tryParsePrincipal(text)
  if (principal === null) {
    throw new PrincipalFormatError(`expected a string in format principalType:principalName but got ${text}`)
  }
  return principal
}

export function samePrincipal(a: KafkaPrincipal, b: KafkaPrincipal): boolean {
  return a.principalType === b.principalType && a.name === b.name
}

/** Text that is not `type:name`. */
export class PrincipalFormatError extends Error {
  override name = 'PrincipalFormatError'
}

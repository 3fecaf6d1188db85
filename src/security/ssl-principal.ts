/**
 * The principal of a TLS connection, as Kafka's DefaultKafkaPrincipalBuilder builds it: without a
 * verified client certificate `User:ANONYMOUS`; with one, `User:` and the name
 * `ssl.principal.mapping.rules` make of the certificate's subject (Java's RFC 2253 form).
 */
import { ANONYMOUS_PRINCIPAL, type KafkaPrincipal, userPrincipal } from './principal.ts'
import { NoMatchingRuleError, type SslPrincipalMapper } from './ssl-principal-mapper.ts'
import { x500NameOfCertificate } from './x500-name.ts'

/** No rule maps the certificate's name: the connection fails to authenticate (Kafka's KafkaException). */
export class SslPrincipalMappingError extends Error {
  override name = 'SslPrincipalMappingError'
}

/**
 * The principal of a TLS client: `certificate` is the DER of the verified peer certificate
 * (Node's `getPeerCertificate().raw`), or null when the client sent none.
 */
export function sslPrincipal(mapper: SslPrincipalMapper, certificate: Uint8Array | null): KafkaPrincipal {
  if (certificate === null) return ANONYMOUS_PRINCIPAL
  const distinguishedName = x500NameOfCertificate(certificate)
  try {
    return userPrincipal(mapper.getName(distinguishedName))
  } catch (error) {
    if (!(error instanceof NoMatchingRuleError)) throw error
    const message = `Failed to map name for '${distinguishedName}' based on SSL principal mapping rules.`
    throw new SslPrincipalMappingError(message, { cause: error })
  }
}

/** Authentication (SASL mechanisms, JAAS, TLS principals) and authorization (ACLs). */
export * from './acl.ts'
export * from './acl-requests.ts'
export * from './api-authorizations.ts'
export * from './authorizer.ts'
export * from './host-address.ts'
export * from './principal.ts'
export * from './ssl-principal-mapper.ts'
export * from './x500-name.ts'

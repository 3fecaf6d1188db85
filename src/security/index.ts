/** Authentication (SASL mechanisms, JAAS, TLS principals) and authorization (ACLs). */
export * from './jaas.ts'
export * from './oauthbearer.ts'
export * from './oauthbearer-jwks.ts'
export * from './plain.ts'
export * from './sasl.ts'
export * from './sasl-server.ts'
export * from './scram.ts'
export * from './scram-credentials.ts'

/** Authentication (SASL mechanisms, JAAS, TLS principals) and authorization (ACLs). */
export {}

/**
 * Certificates for test clusters (`startCluster({ security })`) and TLS tests, made with the
 * `openssl` command in a directory: a CA, a server certificate for 127.0.0.1 and localhost (PEM key
 * and chain, one PEM key store file, a PKCS12 key store), and a client certificate signed by the
 * same CA (PEM and PKCS12), for mTLS. They are valid for two days. The `openssl` command and not
 * node:crypto: Node can make keys but not sign certificates, and a package that can is not a
 * dependency (docs/decisions.md, "Security").
 */
import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

export interface Certificates {
  readonly dir: string
  /** The CA certificate (PEM): the truststore of both sides. */
  readonly caPem: string
  readonly serverKeyPem: string
  readonly serverCertPem: string
  /** The server's key and certificate in one PEM file (KIP-651's PEM key store). */
  readonly serverPemStore: string
  readonly serverP12: string
  readonly clientKeyPem: string
  readonly clientCertPem: string
  readonly clientP12: string
  /** The PKCS12 stores' password. */
  readonly password: string
  /** The client certificate's subject as Java prints it (RFC 2253). */
  readonly clientDn: string
}

function openssl(dir: string, args: string[]): void {
  try {
    execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] })
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT')
      throw new Error('making certificates needs the openssl command, which is not on the PATH')
    throw e
  }
}

/**
 * Makes the certificates in `dir`. `ips`: more IP addresses the server certificate names (a fault
 * cluster's network namespaces). `key` is the key type: RSA 2048 (the default), or EC P-256, which
 * openssl makes in a few milliseconds instead of about a hundred per key.
 */
export function makeCertificates(
  dir: string,
  password = 'store-secret',
  ips: readonly string[] = [],
  key: 'rsa' | 'ec' = 'rsa',
): Certificates {
  const newKey =
    key === 'rsa' ? ['-newkey', 'rsa:2048'] : ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1']
  const days = '2'
  openssl(dir, [
    'req',
    '-x509',
    ...newKey,
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    days,
    '-subj',
    '/CN=weir-test-ca',
  ])
  writeFileSync(
    join(dir, 'server.ext'),
    `subjectAltName=${['127.0.0.1', ...ips].map((ip) => `IP:${ip}`).join(',')},DNS:localhost\n`,
  )
  for (const [name, subject, ext] of [
    ['server', '/CN=localhost', ['-extfile', 'server.ext']],
    ['client', '/O=weir/OU=test/CN=client-one', []],
  ] as const) {
    openssl(dir, [
      'req',
      ...newKey,
      '-nodes',
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
      '-subj',
      subject,
    ])
    openssl(dir, [
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      `${name}.pem`,
      '-days',
      days,
      ...ext,
    ])
    openssl(dir, [
      'pkcs12',
      '-export',
      '-in',
      `${name}.pem`,
      '-inkey',
      `${name}.key`,
      '-certfile',
      'ca.pem',
      '-name',
      name,
      '-out',
      `${name}.p12`,
      '-passout',
      `pass:${password}`,
    ])
  }
  const store = join(dir, 'server-store.pem')
  writeFileSync(
    store,
    Buffer.concat([readFileSync(join(dir, 'server.key')), readFileSync(join(dir, 'server.pem'))]),
  )
  return {
    dir,
    caPem: join(dir, 'ca.pem'),
    serverKeyPem: join(dir, 'server.key'),
    serverCertPem: join(dir, 'server.pem'),
    serverPemStore: store,
    serverP12: join(dir, 'server.p12'),
    clientKeyPem: join(dir, 'client.key'),
    clientCertPem: join(dir, 'client.pem'),
    clientP12: join(dir, 'client.p12'),
    password,
    clientDn: 'CN=client-one,OU=test,O=weir',
  }
}

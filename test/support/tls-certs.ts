/** Certificates for TLS tests: the ones `startCluster({ security })` makes (`src/cli/certificates.ts`). */
export {
  type Certificates as TestCerts,
  makeCertificates as makeTestCerts,
} from '../../src/cli/certificates.ts'

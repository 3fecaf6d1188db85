import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { ANONYMOUS_PRINCIPAL, userPrincipal } from './principal.ts'
import { SslPrincipalMappingError, sslPrincipal } from './ssl-principal.ts'
import { SslPrincipalMapper } from './ssl-principal-mapper.ts'
import {
  certificateSubject,
  escapeRfc2253,
  X500NameError,
  x500NameFromDer,
  x500NameFromSubject,
  x500NameOfCertificate,
} from './x500-name.ts'

/**
 * Self-signed test certificates (openssl req -x509) and the subject Java prints for each
 * (`X509Certificate.getSubjectX500Principal().getName()`, OpenJDK 17).
 */
const certificates: readonly { pem: string; java: string }[] = [
  {
    pem: `-----BEGIN CERTIFICATE-----
MIICdDCCAhmgAwIBAgIUSU1WAsUsghojpiGfE1Aw4HicV/cwCgYIKoZIzj0EAwIw
gY0xCzAJBgNVBAYTAlVTMQswCQYDVQQIDAJDQTETMBEGA1UECgwKQWNtZSwgSW5j
LjEMMAoGA1UECwwDZW5nMQwwCgYDVQQLDANvcHMxIDAMBgNVBAMMBWFsaWNlMBAG
CgmSJomT8ixkAQEMAmExMR4wHAYJKoZIhvcNAQkBFg9hbGljZUBhY21lLnRlc3Qw
IBcNMjYxMjAyMDA0NTI1WhgPMjEyNjExMDgwMDQ1MjVaMIGNMQswCQYDVQQGEwJV
UzELMAkGA1UECAwCQ0ExEzARBgNVBAoMCkFjbWUsIEluYy4xDDAKBgNVBAsMA2Vu
ZzEMMAoGA1UECwwDb3BzMSAwDAYDVQQDDAVhbGljZTAQBgoJkiaJk/IsZAEBDAJh
MTEeMBwGCSqGSIb3DQEJARYPYWxpY2VAYWNtZS50ZXN0MFkwEwYHKoZIzj0CAQYI
KoZIzj0DAQcDQgAEfArNU01MZ3fhN4FU7413YP3Z9Fv/o6VHE9nap2xAqAE9d4YD
mWEm2Nhj9mhfl9UFobe3J4y1zs3k8k3pVThMjKNTMFEwHQYDVR0OBBYEFAdFtKMp
7TFbJ6z0FhqFuX+Jif5JMB8GA1UdIwQYMBaAFAdFtKMp7TFbJ6z0FhqFuX+Jif5J
MA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSQAwRgIhAN3Ekwb2jKCsaF2v
1jXkp5k9uMMlKnhJo9lcXcof6PePAiEAg0DQaqdJSWJX6FGIFGHmoZlgcxteajaM
CHhBKyJo3eM=
-----END CERTIFICATE-----`,
    java: '1.2.840.113549.1.9.1=#160f616c6963654061636d652e74657374,CN=alice+UID=a1,OU=ops,OU=eng,O=Acme\\, Inc.,ST=CA,C=US',
  },
  {
    pem: `-----BEGIN CERTIFICATE-----
MIICLzCCAdWgAwIBAgIUROF0is7156DPEvT5XIsqgojBP/8wCgYIKoZIzj0EAwIw
bDETMBEGCgmSJomT8ixkARkWA2NvbTEUMBIGCgmSJomT8ixkARkWBGFjbWUxEjAQ
BgNVBAkMCTEgTWFpbiBTdDELMAkGA1UEBRMCNDIxCzAJBgNVBAwMAkRyMREwDwYD
VQQDDAggI2xlYWQ9YTAgFw0yNjEyMDIwMDQ1NDBaGA8yMTI2MTEwODAwNDU0MFow
bDETMBEGCgmSJomT8ixkARkWA2NvbTEUMBIGCgmSJomT8ixkARkWBGFjbWUxEjAQ
BgNVBAkMCTEgTWFpbiBTdDELMAkGA1UEBRMCNDIxCzAJBgNVBAwMAkRyMREwDwYD
VQQDDAggI2xlYWQ9YTBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABETbC79GMTLk
glvygI5u3RTwGKD1xgXzbLF6dsd3S9f0JzGhy04J9ZmpqoYBNvQHHhX32ZDRZmdX
zBMFeNvSWwGjUzBRMB0GA1UdDgQWBBS2rso9lNzAW2sSlbOY31Jd6GpmsjAfBgNV
HSMEGDAWgBS2rso9lNzAW2sSlbOY31Jd6GpmsjAPBgNVHRMBAf8EBTADAQH/MAoG
CCqGSM49BAMCA0gAMEUCIQCQr7WIvpUUVKP7s1m9jmMHOpXlw8tE2nvODXYXopil
KAIgYoJkTI2m+ZSevGKE9ODdd7zVO2i+O1FL5ZQ8coY3Q4E=
-----END CERTIFICATE-----`,
    java: 'CN=\\ \\#lead\\=a,2.5.4.12=#0c024472,2.5.4.5=#13023432,STREET=1 Main St,DC=acme,DC=com',
  },
  {
    pem: `-----BEGIN CERTIFICATE-----
MIIByjCCAXGgAwIBAgIUDY7K2bBRHmC1S1mJYmpIYzDPhxAwCgYIKoZIzj0EAwIw
OjELMAkGA1UEBhMCVVMxDTALBgNVBAoMBGFjbWUxDDAKBgNVBAsMA2VuZzEOMAwG
A1UEAwwFYWxpY2UwIBcNMjYxMjAyMDA0NTQwWhgPMjEyNjExMDgwMDQ1NDBaMDox
CzAJBgNVBAYTAlVTMQ0wCwYDVQQKDARhY21lMQwwCgYDVQQLDANlbmcxDjAMBgNV
BAMMBWFsaWNlMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE0wON+AWST6bioyYo
Ddt67IJ0q8g1XCArJzH+apB+6MKWCXSVtYGYZsie8eZSTPHwEd2S9k5hMDe/iIxd
YDCrxKNTMFEwHQYDVR0OBBYEFLr9V1qw0QSJwZkYjngeSyVUGRPVMB8GA1UdIwQY
MBaAFLr9V1qw0QSJwZkYjngeSyVUGRPVMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZI
zj0EAwIDRwAwRAIgCCtzKJbmjsaXXply25Ex8xP4RwYQZgfIpszNmsJN+ygCIA9C
ishqtRskedi3xakGl47oZBSsfApUMHeZIaLIky53
-----END CERTIFICATE-----`,
    java: 'CN=alice,OU=eng,O=acme,C=US',
  },
  {
    pem: `-----BEGIN CERTIFICATE-----
MIIB1jCCAXugAwIBAgIUZgDlx4OdFOoQFAnDHfniErYFhAYwCgYIKoZIzj0EAwIw
PzEQMA4GA1UEBwwHWsO8cmljaDEZMBcGA1UECgwQYStiPGM+ZDtlImZcZywgaDEQ
MA4GA1UEAwwHdHJhaWwgIDAgFw0yNjEyMDIwMDQ1NTRaGA8yMTI2MTEwODAwNDU1
NFowPzEQMA4GA1UEBwwHWsO8cmljaDEZMBcGA1UECgwQYStiPGM+ZDtlImZcZywg
aDEQMA4GA1UEAwwHdHJhaWwgIDBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABN93
NoBmQlLfzwc2HXMShBsCedqxKuPJRRsAJPdgpAm4hrgr9KwFJQCOGcnHcI1BvC3C
FSR0DuPkwazAA6wjkZKjUzBRMB0GA1UdDgQWBBRLHCq7aBpkkLbXqMr9PfjhnBov
7zAfBgNVHSMEGDAWgBRLHCq7aBpkkLbXqMr9PfjhnBov7zAPBgNVHRMBAf8EBTAD
AQH/MAoGCCqGSM49BAMCA0kAMEYCIQD4c6qXDZMieoeXO3soca+PC0UUCj7Vkrwj
aritbb2r6AIhAPv9Ew52375p+5YTC0Kqrw+rk5DmUobDGPE4enoIXa7R
-----END CERTIFICATE-----`,
    java: 'CN=trail\\ \\ ,O=a\\+b\\<c\\>d\\;e\\"f\\\\g\\, h,L=Z\u00fcrich',
  },
]

function der(pem: string): Uint8Array {
  return Buffer.from(pem.replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, ''), 'base64')
}

/** DER of a tag and content, short or long length form. */
function tlv(tag: number, content: Uint8Array): Uint8Array {
  const length = content.length < 0x80 ? [content.length] : [0x82, content.length >> 8, content.length & 0xff]
  return Uint8Array.from([tag, ...length, ...content])
}

function concat(...parts: Uint8Array[]): Uint8Array {
  return Uint8Array.from(parts.flatMap((part) => [...part]))
}

describe('x500 names as Java prints them', () => {
  test('certificates: the subject Java prints, keyword and OID attributes, multi-valued, escapes', () => {
    for (const { pem, java } of certificates) assert.equal(x500NameOfCertificate(der(pem)), java)
  })

  test('a name built by hand: reverse order, BMPString, an unknown string type as hex', () => {
    const oid = (bytes: number[]) => tlv(0x06, Uint8Array.from(bytes))
    const ava = (type: Uint8Array, value: Uint8Array) => tlv(0x31, tlv(0x30, concat(type, value)))
    const name = tlv(
      0x30,
      concat(
        ava(oid([0x55, 0x04, 0x06]), tlv(0x13, new TextEncoder().encode('US'))),
        ava(oid([0x55, 0x04, 0x0a]), tlv(0x1e, Uint8Array.from([0x00, 0x41, 0x00, 0xe9]))),
        ava(oid([0x55, 0x04, 0x03]), tlv(0x1c, Uint8Array.from([0, 0, 0, 0x61]))),
      ),
    )
    assert.equal(x500NameFromDer(name), 'CN=#1c0400000061,O=Aé,C=US')
  })

  test('truncated or foreign DER is refused', () => {
    const cert = der(certificates[0]!.pem)
    assert.throws(() => x500NameOfCertificate(cert.subarray(0, 40)), X500NameError)
    assert.throws(() => x500NameFromDer(Uint8Array.from([0x31, 0x00])), X500NameError)
    assert.equal(certificateSubject(cert)[0], 0x30)
  })

  test('escaping: specials, NUL, leading and trailing spaces', () => {
    assert.equal(escapeRfc2253(' a,b=c+d '), '\\ a\\,b\\=c\\+d\\ ')
    assert.equal(escapeRfc2253('#x<y>;"\\'), '\\#x\\<y\\>\\;\\"\\\\')
    assert.equal(escapeRfc2253('a\u0000b'), 'a\\00b')
    assert.equal(escapeRfc2253('   '), '\\ \\ \\ ')
  })

  test("Node's subject object, for the keyword attributes", () => {
    const subject = { C: 'US', O: 'Acme, Inc.', OU: ['eng', 'ops'], CN: 'alice', emailAddress: 'a@b' }
    assert.equal(x500NameFromSubject(subject), 'CN=alice,OU=ops,OU=eng,O=Acme\\, Inc.,C=US')
  })

  test('the principal of a TLS client, as DefaultKafkaPrincipalBuilder builds it', () => {
    const cert = der(certificates[2]!.pem) // CN=alice,OU=eng,O=acme,C=US
    const mapper = SslPrincipalMapper.fromRules('RULE:^CN=(.*?),OU=eng,.*$/$1/U,DEFAULT')
    assert.deepEqual(sslPrincipal(mapper, cert), userPrincipal('ALICE'))
    assert.deepEqual(
      sslPrincipal(SslPrincipalMapper.fromRules(undefined), cert),
      userPrincipal('CN=alice,OU=eng,O=acme,C=US'),
    )
    assert.equal(sslPrincipal(mapper, null), ANONYMOUS_PRINCIPAL)
    assert.throws(
      () => sslPrincipal(SslPrincipalMapper.fromRules('RULE:^O=.*$/x/'), cert),
      SslPrincipalMappingError,
    )
  })
})

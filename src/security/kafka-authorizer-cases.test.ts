import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import type { Uuid } from '../model/index.ts'
import {
  aclOperationFromCode,
  patternTypeFromCode,
  permissionTypeFromCode,
  resourceTypeFromCode,
  type StandardAcl,
} from './acl.ts'
import { authorizerConfig, StandardAuthorizer } from './authorizer.ts'
import { parsePrincipal } from './principal.ts'

/**
 * Random cases answered by Kafka 4.0's own StandardAuthorizer (fixtures/StandardAuthorizerProbe.java):
 * `allowEveryone|superUsers|principal|host|operation|resourceType|resourceName|acls|authorize|authorizeByResourceType`.
 */
const cases = readFileSync(new URL('./fixtures/standard-authorizer-cases.txt', import.meta.url), 'utf8')
  .trim()
  .split('\n')

function parseAcl(text: string): StandardAcl {
  const [type, name, pattern, principal, host, operation, permission] = text.split(',')
  return {
    resourceType: resourceTypeFromCode(Number(type)),
    resourceName: name!,
    patternType: patternTypeFromCode(Number(pattern)),
    principal: principal!,
    host: host!,
    operation: aclOperationFromCode(Number(operation)),
    permissionType: permissionTypeFromCode(Number(permission)),
  }
}

test("authorize and authorizeByResourceType answer as Kafka's StandardAuthorizer did", () => {
  assert.ok(cases.length >= 400)
  for (const [index, line] of cases.entries()) {
    const [allowEveryone, superUsers, principal, host, operation, type, name, acls, want, wantByType] =
      line.split('|')
    const parsed = acls === '' ? [] : acls!.split(';').map(parseAcl)
    const authorizer = new StandardAuthorizer(
      authorizerConfig({ superUsers, allowEveryoneIfNoAclFound: allowEveryone }),
      parsed.map((acl, i) => ({ id: `${i}`.padStart(22, 'A') as Uuid, acl })),
    )
    const context = { principal: parsePrincipal(principal!), host: host! }
    const asked = {
      operation: aclOperationFromCode(Number(operation)),
      resourceType: resourceTypeFromCode(Number(type)),
      resourceName: name!,
    }
    assert.equal(authorizer.authorize(context, asked), want, `case ${index + 1}: ${line}`)
    assert.equal(
      authorizer.authorizeByResourceType(context, asked.operation, asked.resourceType),
      wantByType,
      `case ${index + 1} by type: ${line}`,
    )
  }
})

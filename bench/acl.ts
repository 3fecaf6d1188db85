/**
 * ACL benchmark: StandardAuthorizer.authorize over 50,000 ACLs (literal per topic and user,
 * prefixed per team, a few wildcards), against a scan of every ACL. Prints figures; asserts
 * nothing about time. Run: node bench/acl.ts
 */

import type { Uuid } from '../src/model/index.ts'
import {
  AclOperation,
  AclPermissionType,
  type Action,
  authorizerConfig,
  PatternType,
  ResourceType,
  type StandardAcl,
  StandardAuthorizer,
  userPrincipal,
} from '../src/security/index.ts'

const USERS = 500
const TOPICS_PER_USER = 100
const SECONDS = Number(process.env.BENCH_SECONDS ?? 1)

function acls(): StandardAcl[] {
  const out: StandardAcl[] = []
  const base = { resourceType: ResourceType.Topic, host: '*', permissionType: AclPermissionType.Allow }
  for (let u = 0; u < USERS; u++) {
    for (let t = 0; t < TOPICS_PER_USER; t++) {
      const name = `team-${u % 50}.topic-${u}-${t}`
      out.push({
        ...base,
        resourceName: name,
        patternType: PatternType.Literal,
        principal: `User:u${u}`,
        operation: AclOperation.Read,
      })
    }
  }
  for (let team = 0; team < 50; team++) {
    const prefix = `team-${team}.`
    out.push({
      ...base,
      resourceName: prefix,
      patternType: PatternType.Prefixed,
      principal: `User:lead${team}`,
      operation: AclOperation.All,
    })
  }
  out.push({
    ...base,
    resourceName: '*',
    patternType: PatternType.Literal,
    principal: 'User:*',
    operation: AclOperation.Describe,
  })
  return out
}

function measure(label: string, op: (i: number) => unknown): void {
  let ops = 0
  const start = performance.now()
  while (performance.now() - start < SECONDS * 1000) {
    for (let i = 0; i < 1000; i++) op(ops + i)
    ops += 1000
  }
  const seconds = (performance.now() - start) / 1000
  console.log(
    `${label.padEnd(44)} ${(ops / seconds / 1000).toFixed(1).padStart(9)} k ops/s  ${((seconds / ops) * 1e6).toFixed(2)} µs/op`,
  )
}

const all = acls()
const loadStart = performance.now()
const authorizer = new StandardAuthorizer(
  authorizerConfig({}),
  all.map((acl, i) => ({ id: `${i}`.padStart(22, 'A') as Uuid, acl })),
)
console.log(`loaded ${all.length} ACLs in ${(performance.now() - loadStart).toFixed(0)} ms`)

const action = (i: number): Action => ({
  operation: AclOperation.Read,
  resourceType: ResourceType.Topic,
  resourceName: `team-${(i % USERS) % 50}.topic-${i % USERS}-${i % TOPICS_PER_USER}`,
})
const context = (i: number) => ({ principal: userPrincipal(`u${i % USERS}`), host: '10.0.0.1' })

for (let i = 0; i < 200_000; i++) authorizer.authorize(context(i), action(i)) // warm up
measure('authorize, literal hit', (i) => authorizer.authorize(context(i), action(i)))
measure('authorize, other user (prefix walk, denied)', (i) => authorizer.authorize(context(i + 1), action(i)))
measure('authorizeByResourceType WRITE on TOPIC', (i) =>
  authorizer.authorizeByResourceType(context(i), AclOperation.Write, ResourceType.Topic),
)
measure('scan of every ACL (for comparison)', (i) => {
  const name = action(i).resourceName
  return all.some(
    (acl) =>
      acl.resourceName === name ||
      (acl.patternType === PatternType.Prefixed && name.startsWith(acl.resourceName)),
  )
})

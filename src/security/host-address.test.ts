import assert from 'node:assert/strict'
import { test } from 'node:test'
import { javaHostAddress } from './host-address.ts'

test("client addresses as Java's getHostAddress() prints them", () => {
  const cases: readonly [string, string][] = [
    ['127.0.0.1', '127.0.0.1'],
    ['::1', '0:0:0:0:0:0:0:1'],
    ['::', '0:0:0:0:0:0:0:0'],
    ['::ffff:10.0.0.1', '10.0.0.1'],
    ['2001:DB8::ff00:42:8329', '2001:db8:0:0:0:ff00:42:8329'],
    ['fe80::1%eth0', 'fe80:0:0:0:0:0:0:1%eth0'],
    ['1:2:3:4:5:6:7:8', '1:2:3:4:5:6:7:8'],
    ['::10.1.2.3', '0:0:0:0:0:0:a01:203'],
    ['not:an::add::ress', 'not:an::add::ress'],
  ]
  for (const [node, java] of cases) assert.equal(javaHostAddress(node), java, node)
})

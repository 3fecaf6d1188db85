/// <reference lib="dom" />
/**
 * The web console of a secured cluster (startCluster with SASL_SSL, users and the StandardAuthorizer):
 * it asks for credentials, logs in through the SASL_SSL listener as that user, and the cluster's
 * ACLs decide what each user sees and does. Checked in a real Chromium and over plain HTTP, beside
 * the HTTP bounds (methods, media types, sizes, origins).
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import kafkajs from 'kafkajs'
import type { Browser, Page } from 'playwright-core'
import { type EmbeddedCluster, startCluster } from 'weir'
import { launchBrowser } from '../support/browser.ts'
import { startWeirConsole } from '../support/weir-console.ts'
import { writeProperties } from '../support/weir-process.ts'

const ADMIN_PASSWORD = 'admin-pw-7f3e'
const ALICE_PASSWORD = 'alice-pw-91ac'

describe('web console of a secured cluster', { timeout: 180_000 }, () => {
  let cluster: EmbeddedCluster
  let base: string
  let browser: Browser

  before(async () => {
    cluster = await startCluster({
      security: {
        users: { admin: ADMIN_PASSWORD, alice: ALICE_PASSWORD },
        superUsers: ['admin'],
        authorizer: true,
      },
    })
    base = `http://127.0.0.1:${cluster.nodes[0]!.httpPort}`
    const kafka = new kafkajs.Kafka({
      ...cluster.security!.kafkajsConfig('admin'),
      logLevel: kafkajs.logLevel.NOTHING,
    })
    const admin = kafka.admin()
    await admin.connect()
    await admin.createTopics({
      topics: [
        { topic: 'public-orders', numPartitions: 1 },
        { topic: 'secret', numPartitions: 1 },
      ],
    })
    // alice may see and read public-orders, and nothing else.
    await admin.createAcls({
      acl: ['DESCRIBE', 'READ'].map((operation) => ({
        resourceType: kafkajs.AclResourceTypes.TOPIC,
        resourceName: 'public-orders',
        resourcePatternType: kafkajs.ResourcePatternTypes.LITERAL,
        principal: 'User:alice',
        host: '*',
        operation: kafkajs.AclOperationTypes[operation as 'READ'],
        permissionType: kafkajs.AclPermissionTypes.ALLOW,
      })),
    })
    await admin.disconnect()
    browser = await launchBrowser()
  })

  after(async () => {
    await browser?.close()
    await cluster?.stop()
  })

  const basic = (user: string, password: string) =>
    `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`

  async function logIn(page: Page, user: string, password: string): Promise<void> {
    await page.goto(`${base}/console/#/topics`)
    await page.waitForSelector('#login')
    await page.fill('#login input[name=user]', user)
    await page.fill('#login input[name=password]', password)
    await page.click('#login button')
  }

  it('asks for credentials, refuses a wrong password, and shows a user only what ACLs let it describe', async () => {
    const page = await browser.newPage()
    await logIn(page, 'alice', 'not-her-password')
    await page.waitForSelector('.error')
    assert.match((await page.textContent('.error')) ?? '', /[Aa]uthentication failed/)
    assert.ok(!(await page.content()).includes('not-her-password'))
    await logIn(page, 'alice', ALICE_PASSWORD)
    await page.waitForFunction(() => document.querySelector('h1')?.textContent === 'Topics')
    const names = await page.$$eval('main table tbody tr td:first-child', (tds) =>
      tds.map((td) => td.textContent),
    )
    assert.deepEqual(names, ['public-orders'])
    // Reading is allowed, writing is not: the page shows Kafka's error.
    // Within the page (a reload would log out: the credentials are held by the page alone).
    await page.evaluate(() => {
      location.hash = '#/topics/public-orders'
    })
    await page.waitForSelector('#produce')
    assert.match((await page.textContent('main')) ?? '', /configs not shown: TOPIC_AUTHORIZATION_FAILED/)
    await page.fill('#produce textarea[name=value]', 'from alice')
    await page.click('#produce button')
    // The form's own answer, placed after it (the view's other notices are not it).
    await page.waitForSelector('#produce + .error')
    assert.match((await page.textContent('#produce + .error')) ?? '', /TOPIC_AUTHORIZATION_FAILED/)
    await page.evaluate(() => {
      location.hash = '#/topics/secret'
    })
    await page.waitForFunction(() => document.querySelector('h1')?.textContent === 'Could not load this view')
    assert.match(
      (await page.textContent('.error')) ?? '',
      /TOPIC_AUTHORIZATION_FAILED|UNKNOWN_TOPIC_OR_PARTITION/,
    )
    await page.close()
  })

  it('a super user sees every topic and produces', async () => {
    const page = await browser.newPage()
    await logIn(page, 'admin', ADMIN_PASSWORD)
    await page.waitForFunction(() => document.querySelector('h1')?.textContent === 'Topics')
    const names = await page.$$eval('main table tbody tr td:first-child', (tds) =>
      tds.map((td) => td.textContent),
    )
    assert.deepEqual(names, ['public-orders', 'secret'])
    await page.evaluate(() => {
      location.hash = '#/topics/secret'
    })
    await page.waitForSelector('#produce')
    await page.fill('#produce textarea[name=value]', 'from admin')
    await page.click('#produce button')
    await page.waitForSelector('text=produced to partition 0 at offset 0')
    await page.close()
  })

  it('weir console --command-config with SASL_SSL and no sasl.jaas.config: each user logs in', async () => {
    const props = cluster.security!.clientProperties('admin')
    delete props['sasl.jaas.config']
    const config = writeProperties(cluster.dir, 'console-client.properties', props)
    const { child, base: url } = await startWeirConsole(['--command-config', config])
    try {
      assert.equal((await fetch(`${url}/console/api/topics`)).status, 401)
      assert.equal(
        (await fetch(`${url}/console/api/topics`, { headers: { Authorization: basic('alice', 'wrong') } }))
          .status,
        401,
      )
      const alice = await fetch(`${url}/console/api/topics`, {
        headers: { Authorization: basic('alice', ALICE_PASSWORD) },
      })
      assert.deepEqual(
        (await alice.json()).rows.map((t: { name: string }) => t.name),
        ['public-orders'],
      )
    } finally {
      child.kill('SIGTERM')
    }
  })

  it('over HTTP: 401 with a Basic challenge without credentials or with wrong ones, never echoing them', async () => {
    let r = await fetch(`${base}/console/api/cluster`)
    assert.equal(r.status, 401)
    assert.match(r.headers.get('www-authenticate') ?? '', /^Basic realm=/)
    r = await fetch(`${base}/console/api/cluster`, {
      headers: { Authorization: basic('admin', 'wrong-pw-x') },
    })
    assert.equal(r.status, 401)
    assert.ok(!(await r.text()).includes('wrong-pw-x'))
    r = await fetch(`${base}/console/api/cluster`, {
      headers: { Authorization: basic('admin', ADMIN_PASSWORD) },
    })
    assert.equal(r.status, 200)
    const body = await r.text()
    assert.ok(!body.includes(ADMIN_PASSWORD))
    assert.equal(JSON.parse(body).brokers.length, 1)
  })

  it('bounds: unknown paths 404, wrong methods 405, non-JSON bodies 415, large bodies 413, other origins 403', async () => {
    const auth = { Authorization: basic('admin', ADMIN_PASSWORD) }
    assert.equal((await fetch(`${base}/console/api/nothing`, { headers: auth })).status, 404)
    assert.equal((await fetch(`${base}/console/nothing.js`)).status, 404)
    assert.equal((await fetch(`${base}/elsewhere`)).status, 404)
    const del = await fetch(`${base}/console/api/topics`, { method: 'DELETE', headers: auth })
    assert.equal(del.status, 405)
    assert.match(del.headers.get('allow') ?? '', /POST/)
    const form = await fetch(`${base}/console/api/topics`, {
      method: 'POST',
      headers: { ...auth, 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'name=x',
    })
    assert.equal(form.status, 415)
    const big = await fetch(`${base}/console/api/topics/secret/records`, {
      method: 'POST',
      headers: { ...auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({ value: 'x'.repeat(2 * 1024 * 1024) }),
    })
    assert.equal(big.status, 413)
    const cross = await fetch(`${base}/console/api/topics`, {
      method: 'POST',
      headers: { ...auth, 'Content-Type': 'application/json', Origin: 'http://evil.example' },
      body: JSON.stringify({ name: 'planted' }),
    })
    assert.equal(cross.status, 403)
    const bad = await fetch(`${base}/console/api/topics`, {
      method: 'POST',
      headers: { ...auth, 'Content-Type': 'application/json' },
      body: '{"name": ',
    })
    assert.equal(bad.status, 400)
    const invalid = await fetch(`${base}/console/api/topics`, {
      method: 'POST',
      headers: { ...auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'bad name!' }),
    })
    assert.equal(invalid.status, 400)
    assert.equal((await invalid.json()).error, 'INVALID_TOPIC_EXCEPTION')
    // The page's headers keep it out of frames and off other origins' scripts.
    const page = await fetch(`${base}/console/`)
    assert.match(page.headers.get('content-security-policy') ?? '', /default-src 'self'/)
    assert.equal(page.headers.get('x-frame-options'), 'DENY')
    // A burst beyond the address's allowance is answered 429, then the allowance refills.
    const burst: number[] = []
    for (let i = 0; i < 150; i++)
      burst.push((await fetch(`${base}/console/api/nothing`, { headers: auth })).status)
    assert.ok(burst.includes(429), `statuses: ${[...new Set(burst)]}`)
    assert.ok(burst.filter((s) => s === 404).length >= 90)
    await new Promise((r) => setTimeout(r, 1500))
    assert.equal((await fetch(`${base}/console/api/nothing`, { headers: auth })).status, 404)
    // The node keeps serving after all of it.
    assert.equal((await fetch(`${base}/v1/health/ready`)).status, 200)
  })
})

describe('http.metrics.authenticate: metrics and health checks take the same logins', {
  timeout: 120_000,
}, () => {
  let cluster: EmbeddedCluster
  before(async () => {
    cluster = await startCluster({
      security: { users: { admin: ADMIN_PASSWORD }, superUsers: ['admin'], authorizer: true },
      config: { 'http.metrics.authenticate': 'true' },
    })
  })
  after(() => cluster?.stop())

  it('401 with a challenge without credentials or with wrong ones; 200 with a Kafka user', async () => {
    const base = `http://127.0.0.1:${cluster.nodes[0]!.httpPort}`
    const auth = (password: string) => ({
      Authorization: `Basic ${Buffer.from(`admin:${password}`).toString('base64')}`,
    })
    for (const path of ['/metrics', '/v1/health/live', '/v1/health/ready']) {
      const open = await fetch(`${base}${path}`)
      assert.equal(open.status, 401, path)
      assert.match(open.headers.get('www-authenticate') ?? '', /^Basic /)
      assert.equal((await fetch(`${base}${path}`, { headers: auth('not-it') })).status, 401, path)
      const ok = await fetch(`${base}${path}`, { headers: auth(ADMIN_PASSWORD) })
      assert.equal(ok.status, 200, path)
      if (path === '/metrics')
        assert.match(await ok.text(), /kafka_server_brokertopicmetrics_messagesin_total/)
    }
  })
})

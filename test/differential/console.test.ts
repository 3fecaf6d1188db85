/// <reference lib="dom" />
/**
 * `weir console` against Apache Kafka 4.0.0 and against Weir, side by side: the same steps through
 * the console's API (create a topic, set a config, produce, read records, reset a group's offsets,
 * list and describe) give the same answers once what must differ (ids, times, sizes, ports) is
 * left out; then every view of the console on Kafka renders in a real Chromium. The console speaks
 * only the Kafka protocol, so this is what proves it serves any Kafka-compatible cluster.
 */
import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { after, before, describe, it } from 'node:test'
import type { Browser } from 'playwright-core'
import { launchBrowser } from '../support/browser.ts'
import { startWeirConsole } from '../support/weir-console.ts'
import { Pair, SIDES, type Side } from './harness.ts'

let pair: Pair
const consoles = new Map<Side, { child: ChildProcess; base: string }>()

before(async () => {
  pair = await Pair.start('console')
  for (const side of SIDES) {
    const a = side === 'kafka' ? pair.kafka.address : pair.weir.address
    consoles.set(side, await startWeirConsole(['-b', `${a.host}:${a.port}`]))
  }
})

after(async () => {
  for (const c of consoles.values()) c.child.kill('SIGTERM')
  await pair?.stop()
})

async function call(side: Side, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const r = await fetch(`${consoles.get(side)!.base}/console/api${path}`, {
    ...(body === undefined
      ? {}
      : { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) }),
  })
  return { status: r.status, json: await r.json() }
}

/** The same call on both sides; the answers, with `normalize` applied, must be equal. */
async function both(path: string, body?: unknown, normalize: (j: any) => unknown = (j) => j) {
  const [kafka, weir] = await Promise.all(SIDES.map((s) => call(s, path, body)))
  assert.deepEqual(
    { status: weir!.status, json: normalize(weir!.json) },
    { status: kafka!.status, json: normalize(kafka!.json) },
    `${body === undefined ? 'GET' : 'POST'} ${path}`,
  )
  return kafka!.json
}

describe('weir console: Apache Kafka and Weir answer alike', { timeout: 240_000 }, () => {
  it('creates a topic, sets a config, produces and reads records', async () => {
    await both(
      '/topics',
      { name: 'c-orders', partitions: 3, replicationFactor: 1, configs: { 'retention.ms': '7200000' } },
      ({ topicId, ...rest }) => ({ ...rest, topicId: typeof topicId }),
    )
    await both('/topics', { name: 'c-orders', partitions: 3 })
    await both('/topics', { name: 'c/bad', partitions: 1 })
    await both('/topics/c-orders/configs', {
      set: { 'cleanup.policy': 'compact,delete' },
      delete: ['retention.ms'],
    })
    await both('/topics/c-orders/configs', { set: { 'retention.ms': 'soon' } })
    for (let i = 0; i < 4; i++)
      await both('/topics/c-orders/records', {
        partition: i % 2,
        key: `k${i}`,
        value: JSON.stringify({ i }),
        headers: { n: String(i) },
      })
    await both('/topics/c-orders/records', { partition: 7, value: 'x' }, ({ error }) => error)
    const records = (j: any) => ({
      ...j,
      records: j.records?.map(({ timestamp, ...r }: any) => ({ ...r, timestamp: typeof timestamp })),
    })
    const read = await both('/topics/c-orders/partitions/0/records?offset=0', undefined, records)
    assert.deepEqual(
      read.records.map((r: any) => Buffer.from(r.key.base64, 'base64').toString()),
      ['k0', 'k2'],
    )
    await both('/topics/c-orders/partitions/1/records?offset=1&limit=1', undefined, records)
    await both('/topics/c-orders/partitions/2/records?offset=0', undefined, records)
    await both(`/topics/c-orders/partitions/0/records?time=${Date.now() + 3_600_000}`, undefined, records)
    await both('/topics/nope/partitions/0/records?offset=0')
  })

  it('lists and describes topics: partitions, offsets and the configs set on the topic', async () => {
    await both('/topics?q=c-', undefined, (j) => j)
    await both('/topics/c-orders', undefined, (j) => ({
      ...j,
      topicId: typeof j.topicId,
      partitions: j.partitions.map(({ sizeBytes, ...p }: any) => ({ ...p, sizeBytes: typeof sizeBytes })),
      configs: j.configs
        .filter((c: any) => c.source === 1)
        .sort((a: any, b: any) => a.name.localeCompare(b.name)),
    }))
    await both('/topics/nope')
  })

  it('resets a group, then lists and describes it with its lag', async () => {
    await both('/groups/c-billing/offsets', { topic: 'c-orders', to: 'earliest', execute: true })
    await both('/groups/c-billing/offsets', { topic: 'c-orders', to: 'shift', by: 1, execute: true })
    await both('/groups/c-billing/offsets', { topic: 'c-orders', to: 'offset', offset: 99, execute: false })
    await both('/groups/c-billing/offsets', { topic: 'c-orders', to: 'sideways' })
    const group = await both('/groups/c-billing')
    assert.equal(group.state, 'Empty')
    assert.deepEqual(
      group.offsets.map((o: any) => [o.partition, o.currentOffset, o.lag]),
      [
        [0, '1', '1'],
        [1, '1', '1'],
        [2, '0', '0'],
      ],
    )
    await both('/groups?q=c-')
    await both('/groups/none-such')
  })

  it('the cluster view: one broker, its quorum, no troubled partition', async () => {
    await both('/cluster', undefined, (j) => ({
      ...j,
      clusterId: typeof j.clusterId,
      brokers: j.brokers.map((b: any) => ({ nodeId: b.nodeId, rack: b.rack })),
      topics: undefined,
      partitions: undefined,
      quorum: { leaderId: j.quorum.leaderId, voters: j.quorum.voters.map((v: any) => v.nodeId) },
    }))
    await both('/partitions?state=offline')
  })

  it('every view of the console on Apache Kafka renders in Chromium', async () => {
    let browser: Browser | undefined
    try {
      browser = await launchBrowser()
      const page = await browser.newPage()
      const errors: string[] = []
      page.on('pageerror', (e) => errors.push(e.message))
      for (const view of [
        '',
        '#/topics',
        '#/topics/c-orders',
        '#/topics/c-orders/0?format=json',
        '#/groups',
        '#/groups/c-billing',
      ]) {
        await page.goto(`${consoles.get('kafka')!.base}/console/${view}`)
        await page.waitForFunction(() =>
          document.getElementById('status')?.textContent?.startsWith('updated'),
        )
        const h1 = (await page.textContent('h1')) ?? ''
        assert.ok(!h1.startsWith('Could not'), `${view}: ${await page.textContent('main')}`)
      }
      assert.match((await page.textContent('main')) ?? '', /c-orders/)
      assert.deepEqual(errors, [])
    } finally {
      await browser?.close()
    }
  })
})

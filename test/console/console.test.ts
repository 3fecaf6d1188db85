/// <reference lib="dom" />
/**
 * The web console in a real headless Chromium against a real 3-node cluster (three `weir start`
 * processes, each serving the console on its HTTP listener): every view, before and after a broker
 * is killed with SIGKILL and after it restarts, and every form, each effect checked through the
 * Kafka protocol with kafkajs (an independent client). `WEIR_CONSOLE_SCREENSHOTS=DIR` saves a
 * screenshot of each view (docs/console/ holds the published ones).
 */
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import kafkajs from 'kafkajs'
import type { Browser, Page } from 'playwright-core'
import { launchBrowser } from '../support/browser.ts'
import { WeirCluster } from '../support/cluster.ts'
import { freePorts, waitFor } from '../support/weir-process.ts'

const SHOTS = process.env.WEIR_CONSOLE_SCREENSHOTS

describe('web console in Chromium, 3-node cluster', { timeout: 240_000 }, () => {
  let cluster: WeirCluster
  let httpPorts: number[]
  let browser: Browser
  let page: Page
  let kafka: kafkajs.Kafka
  const errors: string[] = []

  before(async () => {
    httpPorts = await freePorts(3)
    cluster = await WeirCluster.start({
      prefix: 'weir-console-',
      config: {
        'offsets.topic.replication.factor': 3,
        'default.replication.factor': 3,
        'group.initial.rebalance.delay.ms': 0,
        'replica.lag.time.max.ms': 3000,
      },
      nodeConfig: (id) => ({ 'http.listeners': `http://127.0.0.1:${httpPorts[id - 1]}` }),
    })
    kafka = new kafkajs.Kafka({
      brokers: cluster.bootstrap.split(','),
      logLevel: kafkajs.logLevel.NOTHING,
    })
    const admin = kafka.admin()
    await admin.connect()
    await admin.createTopics({ topics: [{ topic: 'orders', numPartitions: 3, replicationFactor: 3 }] })
    await admin.disconnect()
    const producer = kafka.producer()
    await producer.connect()
    await producer.send({
      topic: 'orders',
      messages: Array.from({ length: 30 }, (_, i) => ({
        partition: i % 3,
        key: `k${i}`,
        value: JSON.stringify({ order: i }),
        headers: { source: 'test' },
      })),
    })
    await producer.disconnect()
    // A group that read 10 records of each partition and stopped: lag 0, then 5 more records.
    const admin2 = kafka.admin()
    await admin2.connect()
    await admin2.setOffsets({
      groupId: 'billing',
      topic: 'orders',
      partitions: [0, 1, 2].map((p) => ({ partition: p, offset: '10' })),
    })
    await admin2.disconnect()
    browser = await launchBrowser()
    page = await browser.newPage()
    page.on('pageerror', (e) => errors.push(e.message))
    if (SHOTS !== undefined) mkdirSync(SHOTS, { recursive: true })
  })

  after(async () => {
    await browser?.close()
    await cluster?.kill()
  })

  const url = (node: number, hash: string) => `http://127.0.0.1:${httpPorts[node - 1]}/console/${hash}`

  /** Opens a view and waits for it to render (the status line says when it was updated). */
  async function open(node: number, hash: string): Promise<string> {
    await page.goto(url(node, hash))
    await page.waitForFunction(() => document.getElementById('status')?.textContent?.startsWith('updated'))
    return (await page.textContent('main')) ?? ''
  }

  async function shot(name: string): Promise<void> {
    if (SHOTS !== undefined) await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true })
  }

  /** The cards at the top of a view: label to value. */
  async function cards(): Promise<Record<string, string>> {
    return page.evaluate(() =>
      Object.fromEntries(
        [...document.querySelectorAll('.card')].map((c) => [
          c.lastChild?.textContent ?? '',
          c.querySelector('b')?.textContent ?? '',
        ]),
      ),
    )
  }

  /** The cells of the first table under the heading that starts with `heading`. */
  async function rows(heading: string): Promise<string[][]> {
    return page.evaluate((h) => {
      const title = [...document.querySelectorAll('h2')].find((e) => e.textContent?.startsWith(h))
      let el = title?.nextElementSibling
      while (el !== null && el !== undefined && el.tagName !== 'TABLE') el = el.nextElementSibling
      if (el === null || el === undefined) return []
      return [...el.querySelectorAll('tbody tr')].map((tr) =>
        [...tr.querySelectorAll('td')].map((td) => td.textContent ?? ''),
      )
    }, heading)
  }

  it('the cluster view: three brokers, the quorum, no troubled partitions', async () => {
    await open(1, '')
    const c = await cards()
    assert.equal(c.brokers, '3')
    assert.equal(c['under-replicated'], '0')
    assert.equal(c.offline, '0')
    const brokers = await rows('Brokers')
    assert.deepEqual(
      brokers.map((r) => r[0]),
      ['1', '2', '3'],
    )
    const voters = await rows('Quorum')
    assert.equal(voters.length, 3)
    assert.equal(voters.filter((r) => r[1] === 'leader').length, 1)
    await shot('cluster')
  })

  it('the topics view lists the topic with its partitions and replication factor', async () => {
    await open(2, '#/topics')
    const row = (
      await page.$$eval('main table tbody tr', (trs) =>
        trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)),
      )
    ).find((r) => r[0] === 'orders')
    assert.deepEqual(row, ['orders', '3', '3', '0', '0'])
    await shot('topics')
  })

  it('a topic view shows leaders, replicas, ISR, offsets and sizes', async () => {
    await open(3, '#/topics/orders')
    const partitions = await rows('Partitions')
    assert.equal(partitions.length, 3)
    for (const r of partitions) {
      assert.equal(r[3]!.split(', ').length, 3, `ISR of partition ${r[0]}: ${r[3]}`)
      assert.equal(r[5], '0')
      assert.equal(r[6], '10')
      assert.match(r[7]!, /\d+(\.\d)? (B|KiB)/)
      assert.notEqual(r[7], '0 B')
    }
    await shot('topic')
  })

  it('records from an offset as text, JSON and hex, and from a time', async () => {
    let text = await open(1, '#/topics/orders/1?offset=2&format=text')
    const table = await page.$$eval('main table tbody tr', (trs) =>
      trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)),
    )
    assert.equal(table.length, 8)
    assert.equal(table[0]![0], '2')
    assert.equal(table[0]![2], 'k7')
    assert.equal(table[0]![3], '{"order":7}')
    assert.equal(table[0]![4], 'source: test')
    await open(1, '#/topics/orders/1?offset=2&format=json')
    assert.match((await page.textContent('main table tbody tr td:nth-child(4)')) ?? '', /"order": 7/)
    await shot('records')
    await open(1, '#/topics/orders/1?offset=2&format=hex')
    assert.equal(await page.textContent('main table tbody tr td:nth-child(3)'), '6b 37')
    text = await open(
      1,
      `#/topics/orders/1?time=${encodeURIComponent(new Date(Date.now() + 3_600_000).toISOString())}`,
    )
    assert.match(text, /reading from 10/)
    const cells = await page.$$eval('main table tbody tr td', (tds) => tds.map((td) => td.textContent))
    assert.deepEqual(cells, ['none'])
  })

  it('creates a topic, sets and removes a config, and produces a record, each seen by kafkajs', async () => {
    await open(1, '#/topics')
    await page.fill('#create-topic input[name=name]', 'payments')
    await page.fill('#create-topic input[name=partitions]', '2')
    await page.fill('#create-topic input[name=configs]', 'retention.ms=86400000')
    await page.click('#create-topic button')
    await page.waitForFunction(() => document.querySelector('h1')?.textContent?.startsWith('Topic payments'))
    const admin = kafka.admin()
    await admin.connect()
    try {
      const md = await admin.fetchTopicMetadata({ topics: ['payments'] })
      assert.equal(md.topics[0]!.partitions.length, 2)
      const configOf = async (name: string) =>
        (
          await admin.describeConfigs({
            resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: 'payments', configNames: [name] }],
            includeSynonyms: false,
          })
        ).resources[0]!.configEntries[0]
      assert.equal((await configOf('retention.ms'))?.configValue, '86400000')

      await page.waitForSelector('#edit-configs')
      await page.fill('#edit-configs input[name=key]', 'cleanup.policy')
      await page.fill('#edit-configs input[name=value]', 'compact')
      await page.click('#edit-configs button')
      await waitFor(
        'cleanup.policy=compact',
        async () => ((await configOf('cleanup.policy'))?.configValue === 'compact' ? true : undefined),
        10_000,
      )
      // The view is drawn again after a change: wait for the new one before using its form.
      await page.waitForFunction(() =>
        [...document.querySelectorAll('h2')].some((e) => e.textContent === 'Configs set on the topic (2)'),
      )
      await page.fill('#edit-configs input[name=key]', 'retention.ms')
      await page.fill('#edit-configs input[name=value]', '')
      await page.click('#edit-configs button')
      await waitFor(
        'retention.ms back to its default',
        async () => ((await configOf('retention.ms'))?.isDefault === true ? true : undefined),
        10_000,
      )

      await page.waitForFunction(() =>
        [...document.querySelectorAll('h2')].some((e) => e.textContent === 'Configs set on the topic (1)'),
      )
      await page.fill('#produce input[name=partition]', '1')
      await page.fill('#produce input[name=key]', 'p-key')
      await page.fill('#produce textarea[name=value]', 'paid')
      await page.fill('#produce input[name=headers]', 'via=console')
      await page.click('#produce button')
      await page.waitForSelector('text=produced to partition 1 at offset 0')
      const offsets = await admin.fetchTopicOffsets('payments')
      assert.equal(offsets.find((o) => o.partition === 1)?.high, '1')
    } finally {
      await admin.disconnect()
    }
    const consumer = kafka.consumer({ groupId: 'console-check' })
    await consumer.connect()
    await consumer.subscribe({ topic: 'payments', fromBeginning: true })
    const seen = await new Promise<kafkajs.KafkaMessage>((resolve) => {
      void consumer.run({ eachMessage: async ({ message }) => resolve(message) })
    })
    await consumer.disconnect()
    assert.equal(seen.key?.toString(), 'p-key')
    assert.equal(seen.value?.toString(), 'paid')
    assert.equal(seen.headers?.via?.toString(), 'console')
  })

  it('groups: the list, a group with its lag, and a reset of its offsets that kafkajs sees', async () => {
    await open(1, '#/groups')
    assert.ok(((await page.textContent('main table')) ?? '').includes('billing'))
    await open(1, '#/groups/billing')
    const lag = await rows('Offsets and lag')
    assert.deepEqual(
      lag.map((r) => r.slice(0, 5)),
      [0, 1, 2].map((p) => ['orders', String(p), '10', '10', '0']),
    )
    await shot('group')
    await page.selectOption('#reset-offsets select[name=to]', 'earliest')
    await page.click('#reset-offsets button')
    await page.waitForSelector('text=reset 3 partition(s)')
    const after = await rows('Offsets and lag')
    assert.deepEqual(
      after.map((r) => r[4]),
      ['10', '10', '10'],
    )
    const admin = kafka.admin()
    await admin.connect()
    const committed = await admin.fetchOffsets({ groupId: 'billing', topics: ['orders'] })
    await admin.disconnect()
    assert.deepEqual(committed[0]!.partitions.map((p) => p.offset).sort(), ['0', '0', '0'])
  })

  it('after a broker is killed: two brokers, under-replicated partitions, every view still served', async () => {
    await cluster.node(3).process.kill()
    // The controller fences node 3 once its heartbeats stop, and the ISRs shrink without it.
    const c = await waitFor(
      'two brokers and under-replicated partitions in the view',
      async () => {
        await open(1, '')
        const now = await cards()
        return now.brokers === '2' && now['under-replicated'] !== '0' ? now : undefined
      },
      60_000,
    )
    assert.equal(c.offline, '0')
    const under = await rows('Under-replicated partitions')
    // Every partition has a replica on node 3: all 55 (50 of __consumer_offsets, 3 + 2 of the
    // topics) are under-replicated, the first 20 listed.
    assert.equal(under.length, 20)
    assert.match((await page.textContent('main')) ?? '', /Under-replicated partitions \(55; the first 20\)/)
    for (const r of under) assert.ok(!r[4]!.split(', ').includes('3'), `ISR without node 3: ${r[4]}`)
    await shot('cluster-broker-down')
    await open(2, '#/topics/orders')
    for (const r of await rows('Partitions')) assert.equal(r[3]!.split(', ').length, 2)
    const topics = await open(2, '#/topics')
    assert.match(topics, /orders/)
    await open(2, '#/topics/orders/0?offset=0')
    assert.equal((await page.$$('main table tbody tr')).length, 10)
    await open(2, '#/groups/billing')
    assert.equal((await rows('Offsets and lag')).length, 3)
    // The console on the killed node's port is gone with it; the others answer.
    await assert.rejects(page.goto(url(3, '')))
  })

  it('after the broker restarts: three brokers and no under-replicated partition again', async () => {
    await cluster.node(3).process.start(60_000)
    await waitFor(
      'three brokers and no under-replicated partition in the view',
      async () => {
        await open(3, '')
        const now = await cards()
        return now.brokers === '3' && now['under-replicated'] === '0' ? now : undefined
      },
      90_000,
    )
    assert.deepEqual(errors, [])
  })
})

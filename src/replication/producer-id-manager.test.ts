import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ErrorCode } from '../protocol/index.ts'
import { type ProducerIdBlock, ProducerIdManager } from './producer-id-manager.ts'

test('ids come from blocks; the next block is fetched ahead, once, while the current one lasts', async () => {
  const asked: number[] = []
  let next = 0n
  const m = new ProducerIdManager(async () => {
    asked.push(asked.length)
    const block: ProducerIdBlock = { start: next, length: 10 }
    next += 100n
    return block
  })
  const ids: bigint[] = []
  for (let i = 0; i < 25; i++) {
    const r = await m.generate()
    assert.ok('producerId' in r)
    ids.push(r.producerId)
  }
  assert.deepEqual(ids.slice(8, 12), [8n, 9n, 100n, 101n])
  assert.deepEqual(ids.slice(-3), [202n, 203n, 204n])
  assert.equal(asked.length, 3, 'one allocation per block, prefetched near the end of the previous one')
})

test('a refusal or an unreachable controller is COORDINATOR_LOAD_IN_PROGRESS, which producers retry', async () => {
  const refused = new ProducerIdManager(async () => ({ errorCode: ErrorCode.StaleBrokerEpoch }))
  assert.deepEqual(await refused.generate(), { errorCode: ErrorCode.CoordinatorLoadInProgress })
  const down = new ProducerIdManager(() => Promise.reject(new Error('no controller')))
  assert.deepEqual(await down.generate(), { errorCode: ErrorCode.CoordinatorLoadInProgress })
})

/**
 * A writer process for the kill -9 test: appends numbered records (value `v<offset>`) to one
 * partition log on the real file system, flushing with group commit, and prints `acked <n>` each
 * time every record below n is durable. The test kills it with SIGKILL at a random moment.
 */
import { systemClock } from '../../src/io/clock.ts'
import { NodeDisk } from '../../src/io/node-disk.ts'
import { encodeBatch } from '../../src/protocol/index.ts'
import { DEFAULT_LOG_CONFIG } from '../../src/storage/log-config.ts'
import { LogManager } from '../../src/storage/log-manager.ts'

const dir = process.argv[2]
if (dir === undefined) throw new Error('usage: kill9-writer.ts <log dir>')
const manager = await LogManager.open(dir, {
  disk: new NodeDisk(),
  clock: systemClock,
  clusterId: 'kill9-cluster',
  nodeId: 1,
  defaultLogConfig: { ...DEFAULT_LOG_CONFIG, segmentBytes: 64 * 1024, indexIntervalBytes: 1024 },
})
const log = await manager.getOrCreateLog('kill9', 0)
let next = Number(log.logEndOffset)
process.stdout.write(`ready ${next}\n`)

const IN_FLIGHT = 8
const payload = 'x'.repeat(200)
async function worker(): Promise<void> {
  for (;;) {
    const n = 1 + (next % 5)
    const records = Array.from({ length: n }, (_, i) => ({
      value: Buffer.from(`v${next + i}|${payload}`),
      timestamp: BigInt(Date.now()),
    }))
    next += n
    const r = await log.append(encodeBatch({ records }), { flush: true })
    if (r.errorCode !== 0) throw new Error(`append failed: ${r.errorCode}`)
    process.stdout.write(`acked ${r.lastOffset + 1n}\n`)
    if (Math.random() < 0.05) await manager.checkpointRecoveryPoints()
  }
}
await Promise.all(Array.from({ length: IN_FLIGHT }, worker))

/**
 * kill -9 on the real file system: a writer process appends and flushes; SIGKILL at a random
 * moment; recovery must give a dense prefix holding every acknowledged record. Twice over the
 * same directory, the second time with a torn tail cut into the last segment by hand.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtemp, readdir, rm, stat, truncate } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { after, describe, it } from 'node:test'
import { systemClock } from '../../src/io/clock.ts'
import { NodeDisk } from '../../src/io/node-disk.ts'
import { LogManager } from '../../src/storage/log-manager.ts'
import { readAll } from '../storage/fixtures.ts'

const ROOT = resolve(import.meta.dirname, '../..')
const NODE = join(ROOT, 'node_modules/.bin/node')
const WRITER = join(ROOT, 'test/storage/kill9-writer.ts')

const dirs: string[] = []
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true })
})

/** Run the writer until it has acknowledged `ackedMin` records past its start, then SIGKILL it. */
function runAndKill(dir: string, ackedMin: number, extraMs: number): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(NODE, [WRITER, dir], { stdio: ['ignore', 'pipe', 'pipe'] })
    let acked = 0
    let start = -1
    let killed = false
    let buffered = ''
    let stderr = ''
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString()
    })
    child.stdout.on('data', (d: Buffer) => {
      buffered += d.toString()
      const lines = buffered.split('\n')
      buffered = lines.pop()!
      for (const line of lines) {
        const [word, n] = line.split(' ')
        if (word === 'ready') start = Number(n)
        if (word === 'acked') acked = Math.max(acked, Number(n))
      }
      if (!killed && start >= 0 && acked - start >= ackedMin) {
        killed = true
        setTimeout(() => child.kill('SIGKILL'), extraMs)
      }
    })
    child.on('exit', (code, signal) => {
      if (signal === 'SIGKILL') resolvePromise(acked)
      else reject(new Error(`writer exited with ${code}: ${stderr}`))
    })
  })
}

async function recover(dir: string): Promise<{ values: string[]; manager: LogManager }> {
  const manager = await LogManager.open(dir, {
    disk: new NodeDisk(),
    clock: systemClock,
    clusterId: 'kill9-cluster',
    nodeId: 1,
  })
  const log = manager.getLog('kill9', 0)
  assert.ok(log !== undefined)
  const records = await readAll(log, 256 * 1024)
  records.forEach((r, i) => {
    assert.equal(r.offset, BigInt(i), 'offsets are dense')
    assert.equal(r.value?.split('|')[0], `v${i}`, 'each record holds its own number')
  })
  return { values: records.map((r) => r.value!), manager }
}

describe('storage: kill -9 of a writer process', () => {
  it('recovers every acknowledged record, twice, then cuts a torn tail', async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'weir-kill9-'))
    dirs.push(dir)
    const acked1 = await runAndKill(dir, 2000, Math.floor(Math.random() * 50))
    const first = await recover(dir)
    assert.ok(first.values.length >= acked1, `acked ${acked1}, recovered ${first.values.length}`)
    assert.equal(first.manager.hadCleanShutdown, false)
    // The manager is dropped without close(): no clean-shutdown marker, as after a crash.
    const acked2 = await runAndKill(dir, 1000, Math.floor(Math.random() * 50))
    let second = await recover(dir)
    assert.ok(second.values.length >= acked2, `acked ${acked2}, recovered ${second.values.length}`)
    assert.deepEqual(second.values.slice(0, first.values.length), first.values)
    // Tear the last segment by hand (1 to 100 bytes off its end, less when it is shorter): recovery cuts the broken batch.
    const partition = join(dir, 'kill9-0')
    const lastSegment = async () => {
      const logs = (await readdir(partition)).filter((n) => n.endsWith('.log')).sort()
      assert.ok(logs.length > 1, 'the writer rolled segments')
      const path = join(partition, logs[logs.length - 1]!)
      return { path, size: (await stat(path)).size }
    }
    let { path: last, size } = await lastSegment()
    // A kill just after a roll leaves the active segment with a batch or two, or none yet (killed
    // between creating the new file and its first write): then let the writer run on a little.
    for (let attempt = 0; size <= 1 && attempt < 5; attempt++) {
      const before = second.values
      await runAndKill(dir, 50, Math.floor(Math.random() * 50))
      second = await recover(dir)
      assert.deepEqual(second.values.slice(0, before.length), before)
      ;({ path: last, size } = await lastSegment())
    }
    assert.ok(size > 1, 'the active segment holds a batch')
    await truncate(last, size - 1 - Math.floor(Math.random() * Math.min(100, size - 1)))
    const third = await recover(dir)
    assert.deepEqual(third.values, second.values.slice(0, third.values.length))
    assert.ok(third.values.length < second.values.length && third.values.length >= second.values.length - 5)
    const log = third.manager.getLog('kill9', 0)!
    assert.equal(log.logEndOffset, BigInt(third.values.length))
    t.diagnostic(
      `acked ${acked1} then ${acked2}; recovered ${first.values.length}, ${second.values.length}, ${third.values.length} after the cut`,
    )
    await third.manager.close()
  })
})

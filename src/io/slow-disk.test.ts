import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { NodeDisk } from './node-disk.ts'
import { controlledDelay, SlowDisk } from './slow-disk.ts'

test('SlowDisk asks for a delay before every write, truncate, sync, rename and dir sync, never before a read', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'weir-slow-disk-'))
  try {
    const asked: number[] = []
    let calls = 0
    const disk = new SlowDisk(new NodeDisk(), () => {
      calls++
      asked.push(calls)
      return 1
    })
    const f = await disk.open(join(dir, 'a'), { create: true })
    await f.append([Buffer.from('hello ')])
    await f.write([Buffer.from('world')], 6)
    await f.sync()
    const afterWrites = calls
    assert.equal(afterWrites, 3)
    const buf = Buffer.alloc(11)
    assert.equal(await f.read(buf, 0, 11), 11)
    assert.equal(buf.toString(), 'hello world', 'the bytes reach the disk underneath')
    assert.equal(await disk.exists(join(dir, 'a')), true)
    assert.deepEqual(await disk.list(dir), ['a'])
    assert.equal(calls, afterWrites, 'reads are not delayed')
    await f.truncate(5)
    await f.close()
    await disk.rename(join(dir, 'a'), join(dir, 'b'))
    await disk.syncDir(dir)
    assert.equal(calls, afterWrites + 3)
    assert.equal((await disk.readFile(join(dir, 'b'))).toString(), 'hello')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('controlledDelay reads milliseconds from its control file; missing, empty or junk is 0', () => {
  const dir = mkdtempSync(join(tmpdir(), 'weir-slow-disk-'))
  try {
    const path = join(dir, 'delay')
    const delay = controlledDelay(path, 0)
    assert.equal(delay(), 0, 'missing file')
    writeFileSync(path, '250\n')
    assert.equal(delay(), 250)
    writeFileSync(path, '')
    assert.equal(delay(), 0, 'empty')
    writeFileSync(path, 'fast')
    assert.equal(delay(), 0, 'junk')
    writeFileSync(path, '-5')
    assert.equal(delay(), 0, 'negative')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

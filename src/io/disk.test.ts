import assert from 'node:assert/strict'
import { readdirSync, readFileSync, readlinkSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { after, describe, it } from 'node:test'
import { type Disk, DiskError, isNotFound, joinPath, parentDir } from './disk.ts'
import { NodeDisk, openFileLimit, openFilesMaxDefault } from './node-disk.ts'
import { SeededRandom } from './random.ts'
import { SimDisk } from './sim-disk.ts'

const tmpRoots: string[] = []
after(async () => {
  for (const root of tmpRoots) await rm(root, { recursive: true, force: true })
})

async function nodeRoot(): Promise<string> {
  const root = await mkdtemp(joinPath(tmpdir(), 'weir-disk-'))
  tmpRoots.push(root)
  return root
}

const impls: [string, () => Promise<{ disk: Disk; root: string }>][] = [
  ['NodeDisk', async () => ({ disk: new NodeDisk(), root: await nodeRoot() })],
  [
    'NodeDisk, every write in the thread pool',
    async () => ({ disk: new NodeDisk({ syncWriteBytesMax: 0 }), root: await nodeRoot() }),
  ],
  [
    'NodeDisk, one file open at a time',
    async () => ({ disk: new NodeDisk({ openFilesMax: 1 }), root: await nodeRoot() }),
  ],
  [
    'SimDisk',
    async () => {
      const disk = new SimDisk()
      await disk.mkdir('/data')
      return { disk, root: '/data' }
    },
  ],
]

for (const [name, make] of impls) {
  describe(`Disk contract: ${name}`, () => {
    it('appends vectored writes, reads them back positionally, tracks size', async () => {
      const { disk, root } = await make()
      const f = await disk.open(joinPath(root, 'a.log'), { create: true })
      assert.equal(f.size(), 0)
      await f.append([Buffer.from('hello '), Buffer.from('world'), Buffer.alloc(0)])
      await f.append([Buffer.from('!')])
      assert.equal(f.size(), 12)
      const into = Buffer.alloc(20)
      assert.equal(await f.read(into, 6, 10, 2), 6)
      assert.equal(into.subarray(2, 8).toString(), 'world!')
      await f.truncate(5)
      assert.equal(f.size(), 5)
      await f.sync()
      await f.close()
      assert.equal((await disk.readFile(joinPath(root, 'a.log'))).toString(), 'hello')
      const again = await disk.open(joinPath(root, 'a.log'))
      assert.equal(again.size(), 5)
      await again.close()
    })

    it('writes positionally, several in flight at once, completing in any order', async () => {
      const { disk, root } = await make()
      const path = joinPath(root, 'p.log')
      const f = await disk.open(path, { create: true })
      await f.append([Buffer.from('head:')])
      // Two vectored writes in flight on disjoint ranges, the later one issued second.
      const first = f.write([Buffer.from('aaaa'), Buffer.from('bb')], 5)
      const second = f.write([Buffer.from('cc'), Buffer.alloc(0), Buffer.from('dddd')], 11)
      await Promise.all([first, second])
      assert.equal(f.size(), 17)
      // A single buffer, overwriting in place, and one past the end leaving a gap of zeros.
      await f.write([Buffer.from('A')], 5)
      await f.write([Buffer.from('zz')], 19)
      assert.equal(f.size(), 21)
      await f.write([], 100) // nothing to write: no change
      assert.equal(f.size(), 21)
      const into = Buffer.alloc(21)
      assert.equal(await f.read(into, 0, 21), 21)
      assert.equal(into.toString('latin1'), 'head:Aaaabbccdddd\0\0zz')
      await f.sync()
      await f.close()
      assert.equal((await disk.readFile(path)).toString('latin1'), 'head:Aaaabbccdddd\0\0zz')
      const again = await disk.open(path)
      assert.equal(again.size(), 21)
      // Many writes in flight at once, each a 4 KiB block of its own byte value.
      const blocks = Array.from({ length: 16 }, (_, i) => Buffer.alloc(4096, i + 1))
      await Promise.all(blocks.map((b, i) => again.write([b], 21 + i * 4096)))
      assert.equal(again.size(), 21 + 16 * 4096)
      const all = await disk.readFile(path)
      for (let i = 0; i < 16; i++)
        assert.ok(all.subarray(21 + i * 4096, 21 + (i + 1) * 4096).equals(blocks[i]!))
      await again.close()
      await assert.rejects(
        again.write([Buffer.from('x')], 0),
        (e) => e instanceof DiskError && e.code === 'EBADF',
      )
    })

    it('reports ENOENT and EEXIST as DiskError codes', async () => {
      const { disk, root } = await make()
      await assert.rejects(disk.open(joinPath(root, 'missing')), (e) => isNotFound(e))
      await assert.rejects(disk.readFile(joinPath(root, 'missing')), (e) => isNotFound(e))
      await assert.rejects(disk.remove(joinPath(root, 'missing')), (e) => isNotFound(e))
      const f = await disk.open(joinPath(root, 'x'), { create: true })
      await f.close()
      await assert.rejects(
        disk.open(joinPath(root, 'x'), { create: true, exclusive: true }),
        (e) => e instanceof DiskError && e.code === 'EEXIST',
      )
      await assert.rejects(f.read(Buffer.alloc(1), 0, 1), (e) => e instanceof DiskError && e.code === 'EBADF')
    })

    it('lists, renames, removes, makes and removes trees, stats', async () => {
      const { disk, root } = await make()
      await disk.mkdir(joinPath(root, 't-0/sub'))
      await disk.mkdir(joinPath(root, 't-0'))
      const f = await disk.open(joinPath(root, 't-0/b'), { create: true, truncate: true })
      await f.append([Buffer.from('xyz')])
      await f.close()
      await disk.rename(joinPath(root, 't-0/b'), joinPath(root, 't-0/c'))
      assert.deepEqual(await disk.list(joinPath(root, 't-0')), ['c', 'sub'])
      assert.deepEqual(await disk.stat(joinPath(root, 't-0/c')), { size: 3, isDirectory: false })
      assert.equal((await disk.stat(joinPath(root, 't-0'))).isDirectory, true)
      assert.equal(await disk.exists(joinPath(root, 't-0/b')), false)
      await disk.syncDir(joinPath(root, 't-0'))
      await disk.remove(joinPath(root, 't-0/c'))
      assert.deepEqual(await disk.list(joinPath(root, 't-0')), ['sub'])
      await disk.removeTree(joinPath(root, 't-0'))
      await disk.removeTree(joinPath(root, 't-0'))
      assert.equal(await disk.exists(joinPath(root, 't-0')), false)
    })

    it('keeps a handle valid across a rename', async () => {
      const { disk, root } = await make()
      const f = await disk.open(joinPath(root, 'old'), { create: true })
      await f.append([Buffer.from('abc')])
      await disk.rename(joinPath(root, 'old'), joinPath(root, 'new'))
      await f.append([Buffer.from('d')])
      await f.close()
      assert.equal((await disk.readFile(joinPath(root, 'new'))).toString(), 'abcd')
    })
  })
}

describe('NodeDisk small writes', () => {
  it('writes up to syncWriteBytesMax on the calling thread: the bytes are in the file when write returns', async () => {
    const root = await nodeRoot()
    const disk = new NodeDisk({ syncWriteBytesMax: 16 })
    const path = joinPath(root, 's.log')
    const f = await disk.open(path, { create: true })
    const small = f.write([Buffer.from('0123456'), Buffer.from('789')], 0)
    assert.equal(readFileSync(path).toString(), '0123456789', 'written before the promise was awaited')
    assert.equal(f.size(), 10)
    await small
    const large = f.write([Buffer.alloc(17, 'x')], 10) // above the limit: the thread pool
    await large
    assert.equal(readFileSync(path).toString(), `0123456789${'x'.repeat(17)}`)
    assert.equal(f.size(), 27)
    await f.close()
  })

  it('a small write on a closed file rejects with EBADF rather than throwing', async () => {
    const root = await nodeRoot()
    const f = await new NodeDisk().open(joinPath(root, 'c.log'), { create: true })
    await f.close()
    let pending: Promise<void> | undefined
    assert.doesNotThrow(() => {
      pending = f.write([Buffer.from('late')], 0)
    })
    await assert.rejects(pending!, (e: unknown) => e instanceof DiskError && e.code === 'EBADF')
  })
})

/** How many descriptors of this process point into `dir`. */
function descriptorsUnder(dir: string): number {
  let n = 0
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`).startsWith(`${dir}/`)) n++
    } catch {
      // closed meanwhile (the readdir's own descriptor)
    }
  }
  return n
}

describe('NodeDisk open-file bound', () => {
  it('holds at most openFilesMax descriptors for many open files, each still reading and writing its own bytes', async () => {
    const root = await nodeRoot()
    const disk = new NodeDisk({ openFilesMax: 8 })
    const files = []
    for (let i = 0; i < 100; i++) {
      const f = await disk.open(joinPath(root, `f${i}`), { create: true })
      await f.append([Buffer.from(`file ${i};`)])
      files.push(f)
    }
    assert.ok(descriptorsUnder(root) <= 8, `${descriptorsUnder(root)} descriptors`)
    assert.equal(disk.openFiles.max, 8)
    assert.ok(disk.openFiles.open <= 8)
    // Each in turn, several at once: every file reopens by its name and appends at its own end.
    await Promise.all(files.map((f, i) => f.write([Buffer.from(`again ${i}`)], f.size())))
    await Promise.all(files.map((f) => f.sync()))
    // Busy files may pass the bound while they work; idle again, the extra ones close.
    assert.ok(disk.openFiles.open <= 8, `${disk.openFiles.open} open`)
    for (let i = 0; i < 100 && descriptorsUnder(root) > 8; i++) await new Promise((r) => setTimeout(r, 10))
    assert.ok(descriptorsUnder(root) <= 8, `${descriptorsUnder(root)} descriptors`)
    for (let i = 0; i < 100; i++) {
      const into = Buffer.alloc(files[i]!.size())
      await files[i]!.read(into, 0, into.length)
      assert.equal(into.toString(), `file ${i};again ${i}`)
    }
    for (const f of files) await f.close()
    assert.equal(descriptorsUnder(root), 0)
    assert.equal(disk.openFiles.open, 0)
  })

  it('keeps the bound while hundreds of opens, appends and syncs start at once', async () => {
    const root = await nodeRoot()
    const disk = new NodeDisk({ openFilesMax: 8 })
    let most = 0
    const sample = () => {
      most = Math.max(most, descriptorsUnder(root))
    }
    const timer = setInterval(sample, 1)
    try {
      const files = await Promise.all(
        Array.from({ length: 200 }, async (_, i) => {
          const f = await disk.open(joinPath(root, `f${i}`), { create: true })
          sample()
          await f.append([Buffer.from(`file ${i}`)])
          sample()
          await f.sync()
          sample()
          return f
        }),
      )
      await Promise.all(files.map((f, i) => f.append([Buffer.from(`;${i}`)]).then(sample)))
      for (const f of files) await f.close()
    } finally {
      clearInterval(timer)
    }
    assert.ok(most <= 8, `at most ${most} descriptors at once`)
    for (let i = 0; i < 200; i++)
      assert.equal(readFileSync(joinPath(root, `f${i}`), 'latin1'), `file ${i};${i}`)
  })

  it('reopens a closed-for-now file by its new name after a rename of it or of its directory', async () => {
    const root = await nodeRoot()
    const disk = new NodeDisk({ openFilesMax: 1 })
    await disk.mkdir(joinPath(root, 'd'))
    const a = await disk.open(joinPath(root, 'd/a'), { create: true })
    await a.append([Buffer.from('a1')])
    const b = await disk.open(joinPath(root, 'b'), { create: true }) // a gives its descriptor to b
    await disk.rename(joinPath(root, 'd/a'), joinPath(root, 'd/a2'))
    await b.append([Buffer.from('b1')])
    await disk.rename(joinPath(root, 'd'), joinPath(root, 'e'))
    await b.append([Buffer.from('b2')])
    await a.append([Buffer.from('a2')])
    await a.close()
    await b.close()
    assert.equal(readFileSync(joinPath(root, 'e/a2'), 'latin1'), 'a1a2')
    assert.equal(readFileSync(joinPath(root, 'b'), 'latin1'), 'b1b2')
  })

  it('keeps a removed file readable through its handle: it never gives that descriptor back', async () => {
    const root = await nodeRoot()
    const disk = new NodeDisk({ openFilesMax: 1 })
    const a = await disk.open(joinPath(root, 'a'), { create: true })
    await a.append([Buffer.from('kept')])
    const b = await disk.open(joinPath(root, 'b'), { create: true })
    await disk.remove(joinPath(root, 'a'))
    await b.append([Buffer.from('x')])
    const c = await disk.open(joinPath(root, 'c'), { create: true })
    const into = Buffer.alloc(4)
    assert.equal(await a.read(into, 0, 4), 4)
    assert.equal(into.toString(), 'kept')
    for (const f of [a, b, c]) await f.close()
  })
})

describe('openFilesMaxDefault', () => {
  it('is half the open-file limit, 4,096 when the limit is unknown', () => {
    assert.equal(openFilesMaxDefault(20_000), 10_000)
    assert.equal(openFilesMaxDefault(null), 4096)
    assert.equal(openFilesMaxDefault(Number.MAX_SAFE_INTEGER), 1 << 29)
    const limit = openFileLimit()
    assert.ok(limit === null || limit > 0)
  })
})

describe('paths', () => {
  it('splits and joins', () => {
    assert.equal(parentDir('/a/b/c'), '/a/b')
    assert.equal(parentDir('/a'), '/')
    assert.equal(parentDir('a'), '.')
    assert.equal(joinPath('/a/', 'b'), '/a/b')
  })
})

describe('SimDisk crashes', () => {
  it('drops unsynced data and keeps synced data', async () => {
    const disk = new SimDisk()
    await disk.mkdir('/d')
    await disk.syncDir('/')
    const f = await disk.open('/d/f', { create: true })
    await disk.syncDir('/d')
    await f.append([Buffer.from('synced')])
    await f.sync()
    await f.append([Buffer.from('-lost')])
    assert.equal(disk.unsyncedBytes('/d/f'), 5)
    disk.crash()
    assert.equal((await disk.readFile('/d/f')).toString(), 'synced')
    await assert.rejects(f.append([Buffer.from('x')]), (e) => e instanceof DiskError && e.code === 'EBADF')
  })

  it('keeps completed writes and names when only the process dies (processOnly)', async () => {
    const disk = new SimDisk()
    await disk.mkdir('/d')
    const f = await disk.open('/d/f', { create: true })
    await f.append([Buffer.from('page-cache')])
    const inFlight = f.write([Buffer.from('XX')], 0)
    disk.crash({ processOnly: true })
    await assert.rejects(inFlight, (e) => e instanceof DiskError && e.code === 'EBADF')
    assert.equal((await disk.readFile('/d/f')).toString(), 'page-cache')
    disk.crash()
    assert.equal((await disk.readFile('/d/f')).toString(), 'page-cache')
  })

  it('makes unsynced creates and renames vanish and unsynced removes come back', async () => {
    const disk = new SimDisk()
    await disk.mkdir('/d')
    await disk.syncDir('/')
    const a = await disk.open('/d/a', { create: true })
    await a.append([Buffer.from('A')])
    await a.sync()
    await disk.syncDir('/d')
    const b = await disk.open('/d/b', { create: true })
    await b.sync()
    await disk.rename('/d/a', '/d/a2')
    disk.crash()
    assert.deepEqual(await disk.list('/d'), ['a'])
    await disk.remove('/d/a')
    disk.crash()
    assert.equal((await disk.readFile('/d/a')).toString(), 'A')
    await disk.rename('/d/a', '/d/a2')
    await disk.syncDir('/d')
    disk.crash()
    assert.deepEqual(await disk.list('/d'), ['a2'])
  })

  it('loses a whole directory created without syncing its parent', async () => {
    const disk = new SimDisk()
    await disk.mkdir('/d/p')
    const f = await disk.open('/d/p/f', { create: true })
    await f.sync()
    await disk.syncDir('/d/p')
    disk.crash()
    assert.deepEqual(disk.paths(), [])
  })

  it('undoes an unsynced truncate', async () => {
    const disk = new SimDisk()
    const f = await disk.open('/f', { create: true })
    await disk.syncDir('/')
    await f.append([Buffer.from('0123456789')])
    await f.sync()
    await f.truncate(3)
    disk.crash()
    assert.equal((await disk.readFile('/f')).toString(), '0123456789')
  })

  it('keeps, loses or tears each unsynced write independently', async () => {
    const outcomes = new Set<string>()
    for (let seed = 0; seed < 200; seed++) {
      const disk = new SimDisk()
      const f = await disk.open('/f', { create: true })
      await disk.syncDir('/')
      await f.append([Buffer.from('base')])
      await f.sync()
      await f.write([Buffer.from('first')], 4)
      await f.write([Buffer.from('second')], 9)
      disk.crash({ random: new SeededRandom(seed) })
      const text = (await disk.readFile('/f')).toString('latin1')
      assert.ok(text.startsWith('base'), text)
      // Every byte is what was written there, or a zero in a hole before a surviving later byte.
      for (let i = 4; i < text.length; i++) {
        assert.ok(text[i] === 'basefirstsecond'[i] || text[i] === '\0', `${JSON.stringify(text)} at ${i}`)
      }
      const first = text.slice(4, 9).padEnd(5, '\0')
      const second = text.slice(9).padEnd(6, '\0')
      const kind = (got: string, whole: string) =>
        got === whole ? 'whole' : got === '\0'.repeat(whole.length) ? 'lost' : 'torn'
      outcomes.add(`${kind(first, 'first')}/${kind(second, 'second')}`)
    }
    // The later write survives while the earlier is lost or torn, and the other way round.
    for (const o of ['lost/whole', 'torn/whole', 'whole/lost', 'whole/torn', 'whole/whole', 'lost/lost'])
      assert.ok(outcomes.has(o), `outcome ${o} in ${[...outcomes].join(' ')}`)
  })

  it('tears a large write sector by sector, not only as a prefix', async () => {
    let holes = 0
    for (let seed = 0; seed < 40; seed++) {
      const disk = new SimDisk()
      const f = await disk.open('/f', { create: true })
      await disk.syncDir('/')
      await f.write([Buffer.alloc(8 * 512, 0x61)], 0)
      disk.crash({ random: new SeededRandom(seed) })
      const bytes = await disk.readFile('/f')
      for (let s = 0; s + 512 <= bytes.length; s += 512) {
        const sector = bytes.subarray(s, s + 512)
        assert.ok(sector.every((b) => b === 0x61) || sector.every((b) => b === 0), 'whole sectors')
        if (sector[0] === 0) holes++
      }
    }
    assert.ok(holes > 0, 'some torn write kept a later sector but not an earlier one')
  })

  it('may keep any part of a write still in flight at the crash, and nothing of it after', async () => {
    const seen = new Set<number>()
    for (let seed = 0; seed < 40; seed++) {
      const disk = new SimDisk()
      const f = await disk.open('/f', { create: true })
      await disk.syncDir('/')
      let release!: () => void
      const held = new Promise<undefined>((r) => {
        release = () => r(undefined)
      })
      disk.setHook((op) => (op === 'write' ? held : undefined))
      const inFlight = f.write([Buffer.from('inflight')], 0)
      await null
      disk.crash({ random: new SeededRandom(seed) })
      release()
      await assert.rejects(inFlight, (e) => e instanceof DiskError && e.code === 'EBADF')
      const text = (await disk.readFile('/f')).toString('latin1')
      for (let i = 0; i < text.length; i++) assert.ok(text[i] === 'inflight'[i] || text[i] === '\0', text)
      seen.add(text.replace(/\0+$/, '').length)
    }
    assert.ok(seen.has(0) && seen.has(8), `lost and kept whole: ${[...seen].join(',')}`)
  })

  it('covers with a sync only the writes completed when it completes', async () => {
    const disk = new SimDisk()
    const f = await disk.open('/f', { create: true })
    await disk.syncDir('/')
    let release!: () => void
    const held = new Promise<undefined>((r) => {
      release = () => r(undefined)
    })
    await f.write([Buffer.from('done')], 0)
    disk.setHook((op) => (op === 'write' ? held : undefined))
    const late = f.write([Buffer.from('late')], 4)
    await f.sync() // the first write is durable; the one in flight is not
    release()
    await late
    assert.equal(disk.writesInFlightMax, 1)
    disk.crash() // without a Random every unsynced write is lost
    assert.equal((await disk.readFile('/f')).toString(), 'done')
  })

  it('counts syncs and fails operations through the hook', async () => {
    const disk = new SimDisk()
    const f = await disk.open('/f', { create: true })
    await f.sync()
    await f.sync()
    assert.equal(disk.syncs, 2)
    disk.setHook((op) => (op === 'append' ? 'EIO' : undefined))
    await assert.rejects(f.append([Buffer.from('x')]), (e) => e instanceof DiskError && e.code === 'EIO')
    assert.equal(f.size(), 0)
    disk.setHook(null)
    await f.append([Buffer.from('x')])
    assert.equal(f.size(), 1)
  })
})

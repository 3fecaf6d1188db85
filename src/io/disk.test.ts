import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { after, describe, it } from 'node:test'
import { type Disk, DiskError, isNotFound, joinPath, parentDir } from './disk.ts'
import { NodeDisk } from './node-disk.ts'
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

  it('tears the last unsynced append at a seeded cut', async () => {
    const seen = new Set<number>()
    for (let seed = 0; seed < 30; seed++) {
      const disk = new SimDisk()
      const f = await disk.open('/f', { create: true })
      await disk.syncDir('/')
      await f.append([Buffer.from('base')])
      await f.sync()
      await f.append([Buffer.from('first')])
      await f.append([Buffer.from('second')])
      disk.crash({ random: new SeededRandom(seed) })
      const text = (await disk.readFile('/f')).toString()
      assert.ok('basesecond'.startsWith(text.slice(0, 4)) && text.startsWith('base'), text)
      // Only a prefix of the last append can survive, at its own position (a hole before it).
      if (text.length > 4) assert.equal(text.slice(9), 'second'.slice(0, text.length - 9))
      seen.add(text.length)
    }
    assert.ok(seen.size > 2, 'different seeds cut at different points')
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

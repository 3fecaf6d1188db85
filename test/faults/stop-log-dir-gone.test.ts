/**
 * A real `weir start` whose log dir disappears under it: SIGTERM's clean shutdown fails (it cannot
 * write its checkpoints), and the process exits with code 1 rather than staying up with half of
 * its parts stopped.
 */
import assert from 'node:assert/strict'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { freePortPair } from '../compat/client-matrix.ts'
import { tempDir, WeirProcess } from '../support/weir-process.ts'

const dir = tempDir('weir-stop-gone-')
let weir: WeirProcess | null = null
after(async () => {
  await weir?.kill()
  dir.remove()
})

test('a failed clean shutdown exits with code 1', async () => {
  weir = new WeirProcess([
    '--data-dir',
    join(dir.path, 'data'),
    '--listen',
    `127.0.0.1:${await freePortPair()}`,
  ])
  await weir.start()
  rmSync(join(dir.path, 'data'), { recursive: true, force: true })
  const code = await Promise.race([
    weir.stop(),
    new Promise<string>((resolve) => setTimeout(() => resolve('still running after 10 s'), 10_000)),
  ])
  assert.equal(code, 1, weir.output)
  assert.match(weir.output, /ERROR shutdown: /)
})

/** The README's startCluster examples are these test files, verbatim: what the README shows runs. */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'

const root = join(import.meta.dirname, '../..')

test('README.md shows test/cli/examples/*.test.ts verbatim', () => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8')
  for (const name of ['kafkajs.test.ts', 'platformatic.test.ts']) {
    const example = readFileSync(join(import.meta.dirname, 'examples', name), 'utf8')
    assert.ok(
      readme.includes(`\`\`\`ts\n${example}\`\`\``),
      `README.md lacks test/cli/examples/${name} verbatim`,
    )
  }
})

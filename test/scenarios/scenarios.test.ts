/**
 * Replays every test/scenarios/*.txt and compares each command's trace with the file. After a
 * deliberate behaviour change, refresh them with `node test/scenarios/scenarios.test.ts --rewrite`
 * and review the diff.
 */
import assert from 'node:assert/strict'
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { runScript } from './scenario-script.ts'

const dir = new URL('.', import.meta.url)
const rewrite = process.argv.includes('--rewrite') || process.env.REWRITE === '1'

describe('raft scenarios', () => {
  for (const name of readdirSync(dir)
    .filter((f) => f.endsWith('.txt'))
    .sort()) {
    it(name, () => {
      const url = new URL(name, dir)
      const text = readFileSync(url, 'utf8')
      const { actual, mismatches } = runScript(text)
      if (rewrite) {
        if (actual !== text) writeFileSync(url, actual)
        return
      }
      assert.equal(
        mismatches.length,
        0,
        `${name}: traces differ (rewrite with --rewrite)\n${mismatches.join('\n\n')}`,
      )
    })
  }
})

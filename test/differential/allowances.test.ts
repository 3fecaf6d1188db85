/**
 * Every accepted difference (allowances.ts) has its row in docs/compatibility.md, and every row of
 * that table names an accepted difference: the document and the test cannot drift apart.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { REPO } from '../support/weir-process.ts'
import { allowances } from './allowances.ts'

const HEADING = '## Differences from Apache Kafka 4.0'

/** The (API, field) cells of the differences table, in order. */
function documentedRows(): { api: string; field: string }[] {
  const text = readFileSync(join(REPO, 'docs/compatibility.md'), 'utf8')
  const start = text.indexOf(HEADING)
  assert.notEqual(start, -1, `docs/compatibility.md has no "${HEADING}" section`)
  const section = text.slice(start + HEADING.length).split(/\n## /)[0]!
  const rows: { api: string; field: string }[] = []
  for (const line of section.split('\n')) {
    const cells = line.split('|').map((c) => c.trim())
    // | API | field | Kafka | Weir | why |  (skipping the header and its rule)
    if (cells.length < 7 || cells[1] === 'API' || /^-+$/.test(cells[1]!)) continue
    for (const api of cells[1]!.split(',').map((a) => a.trim().replaceAll('`', '')))
      rows.push({ api, field: cells[2]!.replaceAll('`', '') })
  }
  return rows
}

test('every accepted difference has its row in docs/compatibility.md, and every row an allowance', () => {
  const rows = documentedRows()
  const documented = new Set(rows.map((r) => `${r.api} | ${r.field}`))
  const allowed = new Set(allowances.map((a) => `${a.api} | ${a.doc.replaceAll('`', '')}`))
  assert.deepEqual(
    [...allowed].filter((k) => !documented.has(k)),
    [],
    'allowances without a row (API | field) in docs/compatibility.md',
  )
  assert.deepEqual(
    [...documented].filter((k) => !allowed.has(k)),
    [],
    'rows in docs/compatibility.md without an allowance',
  )
})

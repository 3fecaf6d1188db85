import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import {
  applyOverrides,
  OverrideSyntaxError,
  PropertiesSyntaxError,
  parseOverrides,
  parseProperties,
} from './properties.ts'

interface JavaCase {
  text: string
  entries?: [string, string][]
  error?: string
}

const java: { cases: JavaCase[] } = JSON.parse(
  readFileSync(new URL('./fixtures/java-properties-cases.json', import.meta.url), 'utf8'),
)

function sorted(map: Map<string, string>): [string, string][] {
  return [...map].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
}

function parsed(text: string): Record<string, string> {
  return Object.fromEntries(parseProperties(text))
}

describe('parseProperties against java.util.Properties', () => {
  it(`reads all ${java.cases.length} captured texts as Java does`, () => {
    const failures: string[] = []
    for (const c of java.cases) {
      let ours: JavaCase
      try {
        ours = { text: c.text, entries: sorted(parseProperties(c.text)) }
      } catch (e) {
        assert.ok(e instanceof PropertiesSyntaxError)
        ours = { text: c.text, error: e.message.replace(/^line \d+: /, '') }
      }
      if (JSON.stringify(ours) !== JSON.stringify(c))
        failures.push(`${JSON.stringify(ours)} != ${JSON.stringify(c)}`)
    }
    assert.deepEqual(failures, [])
  })
})

describe('parseProperties', () => {
  it('takes the three separators and skips blanks around them', () => {
    assert.deepEqual(parsed('a=1\nb: 2\nc 3\nd\t =  4\ne:=5\n'), { a: '1', b: '2', c: '3', d: '4', e: '=5' })
  })

  it('skips comments and blank lines, and keeps trailing blanks of values', () => {
    assert.deepEqual(parsed('# one\n! two\n\n   # three\nk=v  \nx = #not a comment'), {
      k: 'v  ',
      x: '#not a comment',
    })
  })

  it('joins continuation lines, dropping the leading blanks of the next line', () => {
    assert.deepEqual(parsed('listeners=PLAINTEXT://:9092,\\\n    CONTROLLER://:9093\nnext=1'), {
      listeners: 'PLAINTEXT://:9092,CONTROLLER://:9093',
      next: '1',
    })
    assert.deepEqual(
      parsed('a=b\\\\\nc=d'),
      { a: 'b\\', c: 'd' },
      'an even number of backslashes does not continue',
    )
    assert.deepEqual(parsed('a=b\\\r\n  c'), { a: 'bc' })
  })

  it('unescapes \\t \\n \\r \\f, \\uXXXX and escaped separators', () => {
    assert.deepEqual(parsed('a=\\t\\n\\r\\f\nb=\\u00e9\\u20AC\nkey\\ with\\=sep=v\nc=\\q'), {
      a: '\t\n\r\f',
      b: 'é€',
      'key with=sep': 'v',
      c: 'q',
    })
  })

  it('keeps the last of repeated keys', () => {
    assert.deepEqual(parsed('a=1\nb=2\na=3'), { a: '3', b: '2' })
  })

  it('reports a malformed \\u escape with its line', () => {
    assert.throws(
      () => parseProperties('a=1\n\n# c\nb=\\u12G4'),
      (e: unknown) =>
        e instanceof PropertiesSyntaxError && e.line === 4 && /Malformed \\uxxxx encoding/.test(e.message),
    )
    assert.throws(
      () => parseProperties('a=1\r\nb=2\\\r\n  \\u1'),
      (e: unknown) => e instanceof PropertiesSyntaxError && e.line === 2,
    )
  })

  it('reads back what a Java-style writer wrote', () => {
    // Properties.store's escaping: backslash, separators, comment characters, blanks, controls.
    const store = (s: string, isKey: boolean) =>
      s.replace(/[\\=:#! \t\n\r\f]|[^\x20-\x7e]/g, (c, offset: number) => {
        if (c === ' ') return isKey || offset === 0 ? '\\ ' : ' '
        const named: Record<string, string> = { '\t': '\\t', '\n': '\\n', '\r': '\\r', '\f': '\\f' }
        if (named[c] !== undefined) return named[c]
        const code = c.charCodeAt(0)
        return code < 0x20 || code > 0x7e ? `\\u${code.toString(16).padStart(4, '0')}` : `\\${c}`
      })
    fc.assert(
      fc.property(fc.dictionary(fc.string({ minLength: 1 }), fc.string()), (dict) => {
        const text = Object.entries(dict)
          .map(([k, v]) => `${store(k, true)}=${store(v, false)}`)
          .join('\n')
        assert.deepEqual(parsed(text), { ...dict })
      }),
    )
  })
})

describe('parseOverrides', () => {
  it('splits at the first =, later arguments win', () => {
    const overrides = parseOverrides([
      'log.retention.hours=1',
      'listeners=PLAINTEXT://:9092',
      'a=b=c',
      'x=',
      'a=d',
    ])
    assert.deepEqual(Object.fromEntries(overrides), {
      'log.retention.hours': '1',
      listeners: 'PLAINTEXT://:9092',
      a: 'd',
      x: '',
    })
  })

  it('refuses an argument without a key', () => {
    assert.throws(() => parseOverrides(['novalue']), OverrideSyntaxError)
    assert.throws(() => parseOverrides(['=1']), OverrideSyntaxError)
  })

  it('applies over the file, leaving both inputs alone', () => {
    const file = parseProperties('a=1\nb=2')
    const merged = applyOverrides(file, parseOverrides(['b=3', 'c=4']))
    assert.deepEqual(Object.fromEntries(merged), { a: '1', b: '3', c: '4' })
    assert.deepEqual(Object.fromEntries(file), { a: '1', b: '2' })
  })
})

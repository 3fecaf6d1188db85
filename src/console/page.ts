/**
 * The console's page: one HTML document, one script and one stylesheet, plain browser JavaScript
 * with nothing to build. Views are addressed by the URL's hash (#/topics/NAME, ...), so a view can
 * be bookmarked and reloaded. Every value from the cluster is put in the page as text (textContent),
 * never as markup.
 */

export const CONSOLE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Weir console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/console/app.css">
<script src="/console/app.js" defer></script>
</head>
<body>
<header>
<a class="brand" href="#/">Weir console</a>
<nav><a href="#/">Cluster</a><a href="#/topics">Topics</a><a href="#/groups">Groups</a></nav>
<span id="status"></span>
</header>
<main id="view"><p class="muted">Loading…</p></main>
</body>
</html>
`

export const CONSOLE_CSS = `*{box-sizing:border-box}
body{margin:0;font:14px/1.4 system-ui,sans-serif;color:#1d2430;background:#f6f7f9}
header{display:flex;gap:24px;align-items:center;padding:10px 20px;background:#1d2430;color:#fff}
header a{color:#cfd8e3;text-decoration:none}header a:hover{color:#fff}
.brand{font-weight:600;color:#fff}nav{display:flex;gap:16px}#status{margin-left:auto;font-size:12px}
main{padding:16px 20px;max-width:1400px}
h1{font-size:20px;margin:4px 0 12px}h2{font-size:16px;margin:20px 0 8px}
table{border-collapse:collapse;background:#fff;width:100%;margin-bottom:8px}
th,td{text-align:left;padding:5px 8px;border-bottom:1px solid #e3e6ea;vertical-align:top}
th{background:#eef1f4;font-weight:600;font-size:12px;text-transform:uppercase;letter-spacing:.03em}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.cards{display:flex;gap:12px;flex-wrap:wrap;margin-bottom:8px}
.card{background:#fff;border:1px solid #e3e6ea;border-radius:6px;padding:10px 14px;min-width:150px}
.card b{display:block;font-size:22px}.bad{color:#b3261e}.ok{color:#1b7f3b}.muted{color:#6b7480}
form{background:#fff;border:1px solid #e3e6ea;border-radius:6px;padding:10px 14px;margin:8px 0;display:flex;gap:8px;flex-wrap:wrap;align-items:end}
label{display:flex;flex-direction:column;font-size:12px;gap:2px}
input,select,textarea{font:inherit;padding:4px 6px;border:1px solid #c5cbd3;border-radius:4px}
button{font:inherit;padding:5px 12px;border:0;border-radius:4px;background:#2f5bd3;color:#fff;cursor:pointer}
button.secondary{background:#e3e6ea;color:#1d2430}
.error{background:#fdecea;color:#b3261e;border:1px solid #f5c2bd;padding:8px 12px;border-radius:6px;margin:8px 0}
.notice{background:#e8f5ec;border:1px solid #b9e0c5;padding:8px 12px;border-radius:6px;margin:8px 0}
pre{margin:0;white-space:pre-wrap;word-break:break-all;font:12px/1.35 ui-monospace,monospace;max-height:240px;overflow:auto}
.pager{display:flex;gap:8px;align-items:center;margin:6px 0}
`

export const CONSOLE_JS = `'use strict'
const view = document.getElementById('view')
const statusLine = document.getElementById('status')
let login = null

function h(tag, attrs, ...children) {
  const el = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v)
    else el.setAttribute(k, v === true ? '' : String(v))
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue
    el.append(c instanceof Node ? c : document.createTextNode(String(c)))
  }
  return el
}

class ApiError extends Error {
  constructor(status, body) {
    super(body.message || 'request failed')
    this.status = status
    this.code = body.error
  }
}

async function api(path, body) {
  const headers = { 'X-Weir-Console': '1' }
  if (login) headers.Authorization = 'Basic ' + btoa(unescape(encodeURIComponent(login.user + ':' + login.password)))
  const init = { headers }
  if (body !== undefined) {
    init.method = 'POST'
    headers['Content-Type'] = 'application/json'
    init.body = JSON.stringify(body)
  }
  const res = await fetch('/console/api' + path, init)
  const data = await res.json().catch(() => ({ error: 'HTTP_' + res.status, message: res.statusText }))
  if (!res.ok) throw new ApiError(res.status, data)
  return data
}

const enc = encodeURIComponent
function table(headers, rows, numeric) {
  const num = new Set(numeric || [])
  return h('table', {},
    h('thead', {}, h('tr', {}, headers.map((x, i) => h('th', { class: num.has(i) ? 'num' : null }, x)))),
    h('tbody', {}, rows.length === 0
      ? h('tr', {}, h('td', { colspan: headers.length, class: 'muted' }, 'none'))
      : rows.map((r) => h('tr', {}, r.map((c, i) => h('td', { class: num.has(i) ? 'num' : null }, c))))))
}
function list(xs) { return xs.length === 0 ? '-' : xs.join(', ') }
function card(label, value, cls) { return h('div', { class: 'card' }, h('b', { class: cls }, value), label) }
function link(href, text) { return h('a', { href }, text) }
function bytes(n) {
  if (n === null || n === undefined) return '-'
  const v = Number(n)
  return v < 1024 ? v + ' B' : v < 1048576 ? (v / 1024).toFixed(1) + ' KiB' : (v / 1048576).toFixed(1) + ' MiB'
}
function notice(text, cls) { return h('div', { class: cls || 'notice', role: 'status' }, text) }
function pager(result, go) {
  const { total, offset } = result
  const shown = (result.rows || result.partitions).length
  return h('div', { class: 'pager' },
    h('span', { class: 'muted' }, total === 0 ? 'none' : (offset + 1) + '–' + (offset + shown) + ' of ' + total),
    offset > 0 ? h('button', { class: 'secondary', onclick: () => go(Math.max(0, offset - 100)) }, 'Previous') : null,
    offset + shown < total ? h('button', { class: 'secondary', onclick: () => go(offset + 100) }, 'Next') : null)
}
function formValues(form) { return Object.fromEntries(new FormData(form).entries()) }

function showLogin(reason) {
  const form = h('form', { id: 'login', onsubmit: (e) => {
    e.preventDefault()
    const v = formValues(form)
    login = { user: v.user, password: v.password }
    route()
  } },
  h('label', {}, 'User', h('input', { name: 'user', autocomplete: 'username', required: true })),
  h('label', {}, 'Password', h('input', { name: 'password', type: 'password', autocomplete: 'current-password', required: true })),
  h('button', { type: 'submit' }, 'Log in'))
  view.replaceChildren(h('h1', {}, 'Log in to the cluster'), reason ? notice(reason, 'error') : null, form)
}

function troubledTitle(kind, r) { return kind + ' partitions (' + r.total + (r.total > r.rows.length ? '; the first ' + r.rows.length : '') + ')' }

async function clusterView() {
  const c = await api('/cluster')
  const under = c.underReplicated.total > 0 ? c.underReplicated : null
  const offline = c.offline.total > 0 ? c.offline : null
  const q = c.quorum
  const troubled = (r) => table(['Topic', 'Partition', 'Leader', 'Replicas', 'ISR'],
    r.rows.map((p) => [link('#/topics/' + enc(p.topic), p.topic), p.partition, p.leader < 0 ? 'none' : p.leader, list(p.replicas), list(p.isr)]), [1])
  return [
    h('h1', {}, 'Cluster ', h('span', { class: 'muted' }, c.clusterId || '')),
    h('div', { class: 'cards' },
      card('brokers', c.brokers.length),
      card('topics', c.topics),
      card('partitions', c.partitions),
      card('under-replicated', c.underReplicated.total, c.underReplicated.total > 0 ? 'bad' : 'ok'),
      card('offline', c.offline.total, c.offline.total > 0 ? 'bad' : 'ok'),
      card('controller', c.controllerId)),
    h('h2', {}, 'Brokers'),
    table(['Id', 'Host', 'Port', 'Rack'], c.brokers.map((b) => [b.nodeId, b.host, b.port, b.rack || '-']), [0, 2]),
    h('h2', {}, 'Quorum: leader ' + q.leaderId + ', epoch ' + q.leaderEpoch + ', high watermark ' + q.highWatermark),
    table(['Voter', 'Role', 'Log end offset', 'Lag'],
      q.voters.map((v) => [v.nodeId, v.nodeId === q.leaderId ? 'leader' : 'follower', v.logEndOffset, v.lag === null ? '-' : v.lag]), [2, 3]),
    q.observers.length > 0 ? table(['Observer', 'Log end offset'], q.observers.map((o) => [o.nodeId, o.logEndOffset]), [1]) : null,
    under ? [h('h2', {}, troubledTitle('Under-replicated', under)), troubled(under)] : null,
    offline ? [h('h2', { class: 'bad' }, troubledTitle('Offline', offline)), troubled(offline)] : null,
  ]
}

async function topicsView(params) {
  const offset = Number(params.get('offset') || 0)
  const text = params.get('q') || ''
  const internal = params.get('internal') === 'true'
  const r = await api('/topics?offset=' + offset + '&limit=100&q=' + enc(text) + '&internal=' + internal)
  const go = (o) => { location.hash = '#/topics?offset=' + o + '&q=' + enc(text) + '&internal=' + internal }
  const search = h('form', { onsubmit: (e) => { e.preventDefault(); const v = formValues(search); location.hash = '#/topics?q=' + enc(v.q) + '&internal=' + (v.internal === 'on') } },
    h('label', {}, 'Name contains', h('input', { name: 'q', value: text })),
    h('label', {}, 'Internal', h('input', { type: 'checkbox', name: 'internal', checked: internal })),
    h('button', { type: 'submit', class: 'secondary' }, 'Filter'))
  const create = h('form', { id: 'create-topic', onsubmit: async (e) => {
    e.preventDefault()
    const v = formValues(create)
    const configs = {}
    for (const line of (v.configs || '').split(/[\\n,]/)) {
      const i = line.indexOf('=')
      if (i > 0) configs[line.slice(0, i).trim()] = line.slice(i + 1).trim()
    }
    try {
      await api('/topics', { name: v.name, partitions: v.partitions || -1, replicationFactor: v.replicationFactor || -1, configs })
      location.hash = '#/topics/' + enc(v.name)
    } catch (err) { create.after(notice(err.code + ': ' + err.message, 'error')) }
  } },
  h('label', {}, 'New topic', h('input', { name: 'name', required: true })),
  h('label', {}, 'Partitions', h('input', { name: 'partitions', type: 'number', min: 1, placeholder: 'default' })),
  h('label', {}, 'Replication factor', h('input', { name: 'replicationFactor', type: 'number', min: 1, placeholder: 'default' })),
  h('label', {}, 'Configs (key=value, …)', h('input', { name: 'configs', size: 30 })),
  h('button', { type: 'submit' }, 'Create topic'))
  return [
    h('h1', {}, 'Topics'), search,
    table(['Topic', 'Partitions', 'RF', 'Under-replicated', 'Offline'],
      r.rows.map((t) => [link('#/topics/' + enc(t.name), t.name), t.partitions, t.replicationFactor,
        h('span', { class: t.underReplicated > 0 ? 'bad' : null }, t.underReplicated),
        h('span', { class: t.offline > 0 ? 'bad' : null }, t.offline)]), [1, 2, 3, 4]),
    pager(r, go), create,
  ]
}

async function topicView(name, params) {
  const offset = Number(params.get('offset') || 0)
  const t = await api('/topics/' + enc(name) + '?offset=' + offset + '&limit=100')
  const base = '#/topics/' + enc(name)
  const edit = h('form', { id: 'edit-configs', onsubmit: async (e) => {
    e.preventDefault()
    const v = formValues(edit)
    try {
      if (v.value === '') await api(base.slice(1) + '/configs', { delete: [v.key] })
      else await api(base.slice(1) + '/configs', { set: { [v.key]: v.value } })
      route()
    } catch (err) { edit.after(notice(err.code + ': ' + err.message, 'error')) }
  } },
  h('label', {}, 'Config', h('input', { name: 'key', required: true, list: 'config-names' })),
  h('label', {}, 'Value (empty: back to the default)', h('input', { name: 'value', size: 30 })),
  h('datalist', { id: 'config-names' }, (t.configs || []).map((c) => h('option', { value: c.name }))),
  h('button', { type: 'submit' }, 'Set config'))
  const produceForm = h('form', { id: 'produce', onsubmit: async (e) => {
    e.preventDefault()
    const v = formValues(produceForm)
    const headers = {}
    for (const line of (v.headers || '').split(',')) {
      const i = line.indexOf('=')
      if (i > 0) headers[line.slice(0, i).trim()] = line.slice(i + 1)
    }
    try {
      const d = await api(base.slice(1) + '/records', { partition: v.partition === '' ? undefined : Number(v.partition), key: v.key === '' ? null : v.key, value: v.value, headers })
      produceForm.after(notice('produced to partition ' + d.partition + ' at offset ' + d.offset))
    } catch (err) { produceForm.after(notice(err.code + ': ' + err.message, 'error')) }
  } },
  h('label', {}, 'Partition', h('input', { name: 'partition', type: 'number', min: 0, placeholder: 'by key' })),
  h('label', {}, 'Key', h('input', { name: 'key' })),
  h('label', {}, 'Value', h('textarea', { name: 'value', rows: 1, cols: 40 })),
  h('label', {}, 'Headers (k=v, …)', h('input', { name: 'headers' })),
  h('button', { type: 'submit' }, 'Produce record'))
  const configs = t.configs
  const set = configs === null ? [] : configs.filter((c) => c.source === 1)
  return [
    h('h1', {}, 'Topic ' + t.name, h('span', { class: 'muted' }, '  ' + t.topicId)),
    h('h2', {}, 'Partitions (' + t.total + ')'),
    table(['Partition', 'Leader', 'Replicas', 'ISR', 'Offline', 'Start', 'End', 'Size', ''],
      t.partitions.map((p) => [p.partition, p.leader < 0 ? h('span', { class: 'bad' }, 'none') : p.leader, list(p.replicas),
        h('span', { class: p.isr.length < p.replicas.length ? 'bad' : null }, list(p.isr)), list(p.offline),
        p.startOffset ?? '-', p.endOffset ?? '-', bytes(p.sizeBytes), link(base + '/' + p.partition, 'records')]), [0, 5, 6, 7]),
    pager(t, (o) => { location.hash = base + '?offset=' + o }),
    h('h2', {}, 'Produce'), produceForm,
    h('h2', {}, 'Configs set on the topic' + (configs === null ? '' : ' (' + set.length + ')')),
    configs === null
      ? notice('configs not shown: ' + t.configsError.error + ': ' + t.configsError.message, 'error')
      : [table(['Name', 'Value'], set.map((c) => [c.name, c.sensitive ? '(sensitive)' : c.value])), edit,
        h('details', {}, h('summary', {}, 'All configs (' + configs.length + ')'),
          table(['Name', 'Value', 'Source', 'Read-only'], configs.map((c) => [c.name, c.sensitive ? '(sensitive)' : (c.value ?? '-'), SOURCES[c.source] || c.source, c.readOnly ? 'yes' : ''])))],
  ]
}
const SOURCES = { 1: 'topic', 2: 'broker (dynamic)', 3: 'brokers (dynamic default)', 4: 'broker (static)', 5: 'default', 6: 'broker logger' }

function decode(b64) {
  const bin = atob(b64)
  const out = new Uint8Array(bin.length)
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i)
  return out
}
function render(field, format) {
  if (field === null) return h('span', { class: 'muted' }, 'null')
  const raw = decode(field.base64)
  let text
  if (format === 'hex') text = Array.from(raw, (b) => b.toString(16).padStart(2, '0')).join(' ')
  else {
    text = new TextDecoder().decode(raw)
    // Text that is not JSON is shown as it is.
    if (format === 'json') { try { text = JSON.stringify(JSON.parse(text), null, 2) } catch {} }
  }
  return h('pre', {}, text, field.truncated ? h('span', { class: 'muted' }, ' … (' + field.size + ' bytes)') : null)
}

async function recordsView(name, partition, params) {
  const format = params.get('format') || 'text'
  const time = params.get('time') || ''
  const offset = params.get('offset') || ''
  const query = time !== '' ? 'time=' + enc(time) : 'offset=' + enc(offset || '0')
  const r = await api('/topics/' + enc(name) + '/partitions/' + partition + '/records?' + query + '&limit=50')
  const base = '#/topics/' + enc(name) + '/' + partition
  const form = h('form', { id: 'records-from', onsubmit: (e) => {
    e.preventDefault()
    const v = formValues(form)
    location.hash = base + '?' + (v.time !== '' ? 'time=' + enc(v.time) : 'offset=' + enc(v.offset)) + '&format=' + v.format
  } },
  h('label', {}, 'From offset', h('input', { name: 'offset', type: 'number', min: 0, value: offset })),
  h('label', {}, 'or from time (ISO 8601)', h('input', { name: 'time', value: time, placeholder: '2026-01-01T00:00:00Z' })),
  h('label', {}, 'Show as', h('select', { name: 'format' }, ['text', 'json', 'hex'].map((f) => h('option', { value: f, selected: f === format }, f)))),
  h('button', { type: 'submit', class: 'secondary' }, 'Read'))
  const last = r.records.length > 0 ? BigInt(r.records[r.records.length - 1].offset) + 1n : null
  return [
    h('h1', {}, link('#/topics/' + enc(name), name), ' / partition ' + partition),
    h('p', { class: 'muted' }, 'log start ' + r.startOffset + ', end ' + r.endOffset + '; reading from ' + r.from),
    form,
    table(['Offset', 'Timestamp', 'Key', 'Value', 'Headers'],
      r.records.map((x) => [x.offset, new Date(Number(x.timestamp)).toISOString(), render(x.key, format), render(x.value, format),
        x.headers.length === 0 ? '-' : h('div', {}, x.headers.map((hd) => h('div', {}, hd.key + ': ', render(hd.value, format))))]), [0]),
    last !== null && last < BigInt(r.endOffset)
      ? h('button', { class: 'secondary', onclick: () => { location.hash = base + '?offset=' + last + '&format=' + format } }, 'Next records')
      : null,
  ]
}

async function groupsView(params) {
  const offset = Number(params.get('offset') || 0)
  const r = await api('/groups?offset=' + offset + '&limit=100')
  return [
    h('h1', {}, 'Consumer groups'),
    r.unreachable.length > 0 ? notice('brokers ' + r.unreachable.map((u) => u.broker).join(', ') + ' did not answer: their groups are missing', 'error') : null,
    table(['Group', 'State', 'Protocol type'], r.rows.map((g) => [link('#/groups/' + enc(g.group), g.group), g.state || '-', g.protocolType || '-'])),
    pager(r, (o) => { location.hash = '#/groups?offset=' + o }),
  ]
}

async function groupView(id) {
  const g = await api('/groups/' + enc(id))
  const topicsOf = [...new Set(g.offsets.map((o) => o.topic))]
  const reset = h('form', { id: 'reset-offsets', onsubmit: async (e) => {
    e.preventDefault()
    const v = formValues(reset)
    const body = { topic: v.topic, to: v.to, execute: true }
    if (v.to === 'offset') body.offset = v.value
    if (v.to === 'shift') body.by = v.value
    if (v.to === 'datetime') body.datetime = v.value
    try {
      const d = await api('/groups/' + enc(id) + '/offsets', body)
      route()
      setTimeout(() => view.prepend(notice('reset ' + d.partitions.length + ' partition(s)')), 50)
    } catch (err) { reset.after(notice(err.code + ': ' + err.message, 'error')) }
  } },
  h('label', {}, 'Topic', topicsOf.length > 0
    ? h('select', { name: 'topic' }, topicsOf.map((t) => h('option', { value: t }, t)))
    : h('input', { name: 'topic', required: true })),
  h('label', {}, 'To', h('select', { name: 'to' }, ['earliest', 'latest', 'offset', 'shift', 'datetime'].map((t) => h('option', { value: t }, t)))),
  h('label', {}, 'Offset, shift or time', h('input', { name: 'value' })),
  h('button', { type: 'submit' }, 'Reset offsets'))
  return [
    h('h1', {}, 'Group ' + g.group),
    h('div', { class: 'cards' }, card('state', g.state), card('members', g.members.length), card('total lag', g.totalLag, Number(g.totalLag) > 0 ? 'bad' : 'ok'), card('protocol', g.protocol || '-')),
    h('h2', {}, 'Members'),
    table(['Member', 'Client', 'Host', 'Partitions'], g.members.map((m) => [m.memberId, m.clientId, m.host, list(m.partitions.map((p) => p.topic + '-' + p.partition))])),
    h('h2', {}, 'Offsets and lag'),
    table(['Topic', 'Partition', 'Committed', 'Log end', 'Lag', 'Member'],
      g.offsets.map((o) => [link('#/topics/' + enc(o.topic), o.topic), o.partition, o.currentOffset ?? '-', o.logEndOffset ?? '-', o.lag ?? '-', o.memberId || '-']), [1, 2, 3, 4]),
    h('h2', {}, 'Reset offsets (the group must have no active members)'), reset,
  ]
}

async function route() {
  const [path, query] = location.hash.slice(1).split('?')
  const params = new URLSearchParams(query || '')
  const parts = (path || '/').split('/').filter((x) => x !== '').map(decodeURIComponent)
  statusLine.textContent = 'loading…'
  try {
    let content
    if (parts.length === 0) content = await clusterView()
    else if (parts[0] === 'topics' && parts.length === 1) content = await topicsView(params)
    else if (parts[0] === 'topics' && parts.length === 2) content = await topicView(parts[1], params)
    else if (parts[0] === 'topics' && parts.length === 3) content = await recordsView(parts[1], Number(parts[2]), params)
    else if (parts[0] === 'groups' && parts.length === 1) content = await groupsView(params)
    else if (parts[0] === 'groups' && parts.length === 2) content = await groupView(parts[1])
    else content = [h('h1', {}, 'Not found'), link('#/', 'Back to the cluster')]
    view.replaceChildren(...[content].flat(2).filter((x) => x !== null))
    statusLine.textContent = 'updated ' + new Date().toLocaleTimeString()
  } catch (err) {
    statusLine.textContent = ''
    if (err instanceof ApiError && err.status === 401) showLogin(err.code === 'LOGIN_REQUIRED' ? null : err.message)
    else view.replaceChildren(h('h1', {}, 'Could not load this view'), notice((err.code ? err.code + ': ' : '') + err.message, 'error'))
  }
}

window.addEventListener('hashchange', route)
route()
`

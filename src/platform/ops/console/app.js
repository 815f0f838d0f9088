// The ops console: plain browser JavaScript over /api/ops (no framework, no build step). Every
// element is built with textContent (never innerHTML), the token lives in sessionStorage and goes
// in the Authorization header only. Pages are hash routes: #overview, #failures[/<kind>], #audit.
'use strict';

const TOKEN_KEY = 'pin.ops.token';
const $ = (sel) => document.querySelector(sel);
let pollTimer;
let floorMs = 2000;
// The location the view on screen was built for: a page that fails to load for another one (a new
// filter refused) must not leave the old one's buttons acting on the old filter.
let shown = null;

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c !== undefined && c !== null) node.append(c instanceof Node ? c : String(c));
  return node;
}

function claims() {
  try {
    const part = sessionStorage.getItem(TOKEN_KEY).split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    return JSON.parse(atob(part));
  } catch {
    return {};
  }
}
const isOperator = () => claims().admin === true;

async function api(path, opts = {}) {
  const res = await fetch(path, {
    method: opts.method ?? 'GET',
    headers: { authorization: `Bearer ${sessionStorage.getItem(TOKEN_KEY)}`, ...(opts.body ? { 'content-type': 'application/json' } : {}) },
    ...(opts.body ? { body: JSON.stringify(opts.body) } : {}),
  });
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw Object.assign(new Error(`${body.code ?? res.status}: ${body.message ?? res.statusText}`), { status: res.status });
  return body;
}

function showError(err) {
  const box = $('#error');
  box.hidden = !err;
  box.textContent = err ? String(err.message ?? err) : '';
  if (err && err.status === 401) signOut();
}

const when = (iso) => (iso ? new Date(iso).toISOString().replace('T', ' ').slice(0, 19) : '—');
const labelText = (labels) => Object.entries(labels).map(([k, v]) => `${k}=${v}`).join(' ') || '—';
const runbookLink = (alert) => el('a', { href: `/ops/runbooks/${alert}`, target: '_blank', class: 'runbook' }, `runbook ${alert}`);
const actButton = (label, data, onclick) => el('button', { type: 'button', 'data-act': data, disabled: !isOperator(), title: isOperator() ? '' : 'read-only role', onclick }, label);

async function act(fn) {
  try {
    showError(null);
    await fn();
    await route();
  } catch (err) {
    showError(err);
  }
}

function jobsSection(jobs) {
  const rows = jobs.map((j) => {
    const last = j.recentRuns[0];
    return el('tr', { 'data-job': j.name },
      el('td', {}, j.name), el('td', {}, j.schedule.description),
      el('td', { class: j.pausedAt ? 'bad paused' : 'ok' }, j.pausedAt ? `paused by ${j.pausedBy}` : 'active'),
      el('td', {}, j.lease ? `${j.lease.holder} until ${when(j.lease.expiresAt)}` : j.singleRunner ? 'free' : 'every replica'),
      el('td', { class: j.lastOutcome === 'failure' ? 'bad' : '' }, `${j.lastOutcome ?? '—'} ${when(j.lastRunAt)}`),
      el('td', {}, last ? `${last.durationMs} ms ${labelText(last.counts)}` : '—'),
      el('td', { class: 'num' }, `${j.failuresTotal}/${j.runsTotal}`),
      el('td', {}, j.lastError ?? ''),
      el('td', {},
        actButton('Run now', 'run', () => act(() => api(`/api/ops/jobs/${j.name}/run`, { method: 'POST' }))),
        j.pausedAt
          ? actButton('Resume', 'resume', () => act(() => api(`/api/ops/jobs/${j.name}/resume`, { method: 'POST' })))
          : actButton('Pause', 'pause', () => act(() => api(`/api/ops/jobs/${j.name}/pause`, { method: 'POST' })))));
  });
  return el('section', { id: 'jobs' }, el('h2', {}, 'Jobs'), el('table', {},
    el('tr', {}, ...['job', 'schedule', 'state', 'lock holder / lease', 'last run', 'last run with work', 'failed/runs', 'last error', ''].map((h) => el('th', {}, h))), rows));
}

function backlogSection(backlogs) {
  const rows = backlogs.flatMap((b) => (b.series.length ? b.series : [{ labels: {}, value: null }]).map((s) =>
    el('tr', { 'data-metric': b.metric }, el('td', {}, b.title), el('td', {}, labelText(s.labels)),
      el('td', { class: 'num value' }, s.value === null ? '—' : String(s.value)), el('td', {}, b.alert ? runbookLink(b.alert) : ''))));
  return el('section', { id: 'backlogs' }, el('h2', {}, 'Backlogs'), el('table', {}, rows));
}

function alertSection(view) {
  const rows = view.alerts.map((a) => el('tr', { 'data-alert': a.alert },
    el('td', { class: a.state === 'firing' ? 'bad' : 'pending' }, a.state), el('td', {}, a.alert), el('td', {}, a.severity),
    el('td', {}, labelText(a.labels)), el('td', { class: 'num' }, String(a.value)), el('td', {}, `since ${when(a.activeSince)}`), el('td', {}, runbookLink(a.alert))));
  return el('section', { id: 'alerts' }, el('h2', {}, `Alerts that would fire now (${view.rules} rules, ${view.historySeconds} s of samples)`),
    rows.length ? el('table', {}, rows) : el('p', { class: 'ok' }, 'none'),
    view.errors.length ? el('p', { class: 'bad' }, `not evaluated: ${view.errors.map((e) => e.alert).join(', ')}`) : '');
}

async function overviewPage() {
  const o = await api('/api/ops/overview');
  floorMs = o.pollFloorMs;
  return [
    alertSection(o.alerts),
    jobsSection(o.jobs),
    backlogSection(o.backlogs),
    el('section', { id: 'replicas' }, el('h2', {}, 'Hub connections per replica'), el('table', {},
      o.replicas.map((r) => el('tr', {}, el('td', {}, r.holder + (r.current ? ' (this one)' : '')), el('td', { class: 'num' }, String(r.hubConnections)), el('td', {}, when(r.seenAt)))))),
    el('section', { id: 'dependencies' }, el('h2', {}, 'Dependencies (/health/ready)'), el('table', {},
      Object.entries(o.dependencies).map(([k, v]) => el('tr', {}, el('td', {}, k), el('td', { class: v === 'down' ? 'bad' : 'ok' }, v))))),
  ];
}

async function failureKindsPage() {
  const { kinds } = await api('/api/ops/failures');
  return el('section', { id: 'failure-kinds' }, el('h2', {}, 'Failures you can act on'), el('table', {},
    kinds.map((k) => el('tr', { 'data-kind': k.kind }, el('td', {}, el('a', { href: `#failures/${k.kind}` }, k.title)),
      el('td', { class: k.count > 0 ? 'num bad' : 'num' }, k.count === null ? '?' : String(k.count)), el('td', {}, runbookLink(k.alert))))));
}

function filterForm(kind, query) {
  const input = (name, placeholder) => el('label', {}, `${name} `, el('input', { name, placeholder, value: query.get(name) ?? '' }));
  const field = el('select', { name: 'field' }, el('option', { value: '' }, '(field)'), kind.fields.map((f) => el('option', { value: f, selected: query.get('field') === f }, f)));
  return el('form', { class: 'filters', id: 'filters', onsubmit: (e) => {
    e.preventDefault();
    const q = new URLSearchParams([...new FormData(e.target)].filter(([, v]) => v !== ''));
    location.hash = `#failures/${kind.kind}?${q}`;
  } }, input('from', 'ISO time'), input('to', 'ISO time'), input('errorCode', 'code'), field, input('value', 'value'), el('button', { type: 'submit' }, 'Filter'));
}

function bulkPanel(kind, filter) {
  const out = el('div', { id: 'bulk-result' });
  const action = el('select', { id: 'bulk-action' }, kind.actions.map((a) => el('option', { value: a }, a)));
  // Not through act(): the page is not re-rendered, so the progress stays in view until it ends.
  const run = actButton('Run', 'bulk-run', async () => {
    try {
      run.disabled = true;
      const started = await api(`/api/ops/failures/${kind.kind}/actions`, { method: 'POST', body: { action: action.value, filter, dryRun: false } });
      await followProgress(started.auditId, out);
    } catch (err) {
      showError(err);
    }
  });
  run.disabled = true;
  const dry = actButton('Dry run', 'dry-run', async () => {
    try {
      const r = await api(`/api/ops/failures/${kind.kind}/actions`, { method: 'POST', body: { action: action.value, filter, dryRun: true } });
      out.replaceChildren(el('p', { id: 'dry-run-result' }, `${r.wouldChange} of ${r.matched} rows would change (${action.value})`),
        el('ul', {}, r.sample.map((s) => el('li', {}, `${s.id} ${s.errorCode ?? ''}`))));
      run.disabled = r.wouldChange === 0;
    } catch (err) {
      showError(err);
    }
  });
  return el('section', { id: 'bulk' }, el('h2', {}, 'Bulk action on this filter'), action, dry, run, out);
}

async function followProgress(auditId, out) {
  for (;;) {
    const a = await api(`/api/ops/audit/${auditId}`);
    out.replaceChildren(el('p', { id: 'bulk-progress', 'data-status': a.status }, `${a.action}: ${a.changed} of ${a.matched} changed — ${a.status}${a.error ? ` (${a.error})` : ''}`));
    // Done, failed (also when a replica found its process gone) or refused: nothing more to follow;
    // nor once the panel is gone (another page or filter).
    if (a.status !== 'running' || !out.isConnected) return;
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function failuresPage(kindName, query) {
  const api_query = new URLSearchParams([...query].filter(([k]) => ['from', 'to', 'errorCode', 'field', 'value'].includes(k)));
  const list = await api(`/api/ops/failures/${kindName}?${api_query}`);
  const filter = Object.fromEntries(api_query);
  const rows = list.items.map((r) => el('tr', { 'data-id': r.id }, el('td', {}, r.id), el('td', {}, when(r.at)), el('td', {}, r.errorCode ?? ''),
    el('td', {}, Object.entries(r.fields).filter(([, v]) => v !== null).map(([k, v]) => `${k}=${v}`).join(' ')),
    el('td', {}, r.traceUrl ? el('a', { href: r.traceUrl, target: '_blank' }, 'trace') : ''), el('td', {}, runbookLink(list.kind.alert))));
  return [
    el('section', { id: 'failures' }, el('h2', {}, `${list.kind.title}: ${list.total}`), filterForm(list.kind, query),
      el('table', { id: 'failure-rows' }, el('tr', {}, ...['id', 'failed at', 'error', 'fields', '', ''].map((h) => el('th', {}, h))), rows)),
    list.kind.actions.length > 0 ? bulkPanel(list.kind, filter) : el('p', { id: 'read-only-kind' }, 'Read-only: the runbook says how to act on these.'),
  ];
}

async function auditPage() {
  const { items } = await api('/api/ops/audit');
  return el('section', { id: 'audit' }, el('h2', {}, 'Audit'), el('table', { id: 'audit-rows' },
    el('tr', {}, ...['when', 'who', 'role', 'action', 'target', 'filter / params', 'dry run', 'matched', 'changed', 'status', 'answer', 'error'].map((h) => el('th', {}, h))),
    items.map((a) => el('tr', { 'data-action': a.action, 'data-status': a.status }, el('td', {}, when(a.at)), el('td', {}, a.actor), el('td', {}, a.role), el('td', {}, a.action),
      el('td', {}, a.target), el('td', { class: 'params' }, JSON.stringify(a.filter)), el('td', {}, a.dryRun ? 'yes' : 'no'), el('td', { class: 'num' }, String(a.matched ?? '')),
      el('td', { class: 'num' }, String(a.changed)), el('td', { class: a.status === 'refused' || a.status === 'failed' ? 'bad' : '' }, a.status),
      el('td', { class: 'num' }, String(a.httpStatus ?? '')), el('td', {}, a.error ?? '')))));
}

async function route() {
  clearTimeout(pollTimer);
  if (!sessionStorage.getItem(TOKEN_KEY)) return signOut();
  const [page, rest = ''] = location.hash.slice(1).split('/');
  const [kind, q = ''] = rest.split('?');
  for (const a of document.querySelectorAll('nav a')) a.classList.toggle('active', a.id === `nav-${page || 'overview'}`);
  try {
    const content = page === 'failures' ? (kind ? await failuresPage(kind, new URLSearchParams(q)) : await failureKindsPage()) : page === 'audit' ? await auditPage() : await overviewPage();
    $('#view').replaceChildren(...[content].flat());
    shown = location.hash;
    $('#updated').textContent = `updated ${when(new Date().toISOString())}`;
    showError(null);
  } catch (err) {
    // A live page's poll that fails keeps what it showed; a page or filter that fails drops the
    // previous one (a bulk panel there would run on the filter it was built for, maybe every row).
    if (shown !== location.hash) {
      $('#view').replaceChildren();
      shown = null;
    }
    showError(err);
  }
  // Live: the overview and the audit poll, never faster than the server's floor; unticking pauses.
  if ($('#live-toggle').checked && page !== 'failures') pollTimer = setTimeout(route, Math.max(floorMs, 1000));
}

function signOut() {
  clearTimeout(pollTimer);
  sessionStorage.removeItem(TOKEN_KEY);
  $('#sign-in').hidden = false;
  $('#view').replaceChildren();
  $('#who').textContent = '';
}

document.addEventListener('DOMContentLoaded', () => {
  $('#sign-in').addEventListener('submit', (e) => {
    e.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $('#token').value.trim());
    $('#token').value = '';
    start();
  });
  $('#sign-out').addEventListener('click', signOut);
  $('#live-toggle').addEventListener('change', route);
  window.addEventListener('hashchange', route);
  if (sessionStorage.getItem(TOKEN_KEY)) start();
  else signOut();
});

function start() {
  $('#sign-in').hidden = true;
  const c = claims();
  $('#who').textContent = `${c.sub ?? '?'} (${c.admin === true ? 'operator' : 'read-only'})`;
  $('#who').dataset.role = c.admin === true ? 'operator' : 'viewer';
  void route();
}

// The ops console: plain browser JavaScript over /api/ops (no framework, no build step); this file
// holds the audit page, the router, sign-in and sign-out (helpers in core.js, pages in overview.js
// and failures.js). The token lives in sessionStorage and goes in the Authorization header only.
// Pages are hash routes: #overview, #failures[/<kind>], #audit.
'use strict';

// The audit, newest first, a page at a time (#audit?after=<cursor> reopens a page); actors by name
// where a module knows the user, the id beside it.
async function auditPage(query) {
  const after = query.get('after');
  const { items, next } = await api(`/api/ops/audit${after ? `?after=${encodeURIComponent(after)}` : ''}`);
  const who = (a) => (a.actorName ? [el('span', { class: 'actor-name' }, a.actorName), el('br'), el('small', { class: 'muted' }, a.actor)] : a.actor);
  return el('section', { id: 'audit' }, el('h2', {}, 'Audit'), el('table', { id: 'audit-rows' },
    headRow(['when', 'who', 'role', 'action', 'target', 'filter / params', 'dry run', 'matched', 'changed', 'status', 'answer', 'error']),
    items.map((a) => el('tr', { 'data-action': a.action, 'data-status': a.status, 'data-key': a.id }, el('th', { scope: 'row' }, when(a.at)), el('td', { class: 'actor', 'data-actor': a.actor }, who(a)), el('td', {}, a.role), el('td', {}, a.action),
      el('td', { class: 'params' }, a.target), el('td', { class: 'params' }, JSON.stringify(a.filter)), el('td', {}, a.dryRun ? 'yes' : 'no'), el('td', { class: 'num' }, String(a.matched ?? '')),
      el('td', { class: 'num' }, String(a.changed)), el('td', { class: a.status === 'refused' || a.status === 'failed' ? 'bad' : '' }, a.status),
      el('td', { class: 'num' }, String(a.httpStatus ?? '')), el('td', { class: 'params' }, a.error ?? '')))),
    el('p', { id: 'audit-pager' }, after ? el('a', { href: '#audit', id: 'audit-first' }, '« newest') : '', after && next ? ' ' : '',
      next ? el('a', { href: `#audit?after=${encodeURIComponent(next)}`, id: 'audit-next' }, 'older »') : ''));
}

// A runbook in the console: the server renders and sanitises the markdown (runbook-html.ts); the
// page parses it (DOMParser runs no script) and shows its article, under the console's CSP.
async function runbookPage(alert) {
  const res = await fetch(`/ops/runbooks/${encodeURIComponent(alert)}`);
  if (!res.ok) throw Object.assign(new Error(`OPS_RUNBOOK_NOT_FOUND: no runbook for ${alert}`), { status: res.status });
  const article = new DOMParser().parseFromString(await res.text(), 'text/html').querySelector('article.runbook');
  return el('section', { id: 'runbook-view', 'data-alert': alert }, el('p', {}, el('a', { href: '#overview' }, '« overview'), ' · ', el('a', { href: `/ops/runbooks/${alert}`, target: '_blank' }, 'open on its own')),
    document.importNode(article, true));
}

// Each cell says its column (data-label): a narrow screen shows the rows as cards (app.css).
function labelCells(root) {
  for (const table of root.querySelectorAll('table')) {
    const names = [...(table.querySelector('tr')?.children ?? [])].map((th) => (th.getAttribute('scope') === 'col' ? th.textContent : ''));
    for (const tr of table.querySelectorAll('tr')) [...tr.children].forEach((cell, i) => names[i] && cell.tagName === 'TD' && cell.setAttribute('data-label', names[i]));
  }
}

// Hash routes, each one reopening its view on reload: #overview, #jobs/<name>, #failures,
// #failures/<kind>?<filter>&after=<page>, #failures/<kind>/<id>, #runbook/<alert>, #audit?before=<page>.
function pageFor(page, name, id, query) {
  if (page === 'failures') return id ? failureDetailPage(name, id) : name ? failuresPage(name, query) : failureKindsPage();
  if (page === 'jobs' && name) return jobPage(name);
  if (page === 'runbook' && name) return runbookPage(name);
  if (page === 'audit') return auditPage(query);
  return overviewPage();
}

async function route() {
  clearTimeout(pollTimer);
  if (!sessionStorage.getItem(TOKEN_KEY)) return signOut();
  const [path, q = ''] = location.hash.slice(1).split('?');
  const [page, name, id] = path.split('/').map(decodeURIComponent);
  const nav = page === 'jobs' ? 'overview' : page === 'runbook' ? 'failures' : page || 'overview';
  for (const a of document.querySelectorAll('nav a')) a.classList.toggle('active', a.id === `nav-${nav}`);
  try {
    const content = await pageFor(page, name, id, new URLSearchParams(q));
    const fresh = el('div', {}, ...[content].flat());
    labelCells(fresh);
    // The same page again (a live refresh, an action's answer): updated in place, focus and selection
    // kept; another page or filter: built anew, so nothing of the previous one lingers.
    if (shown === location.hash) patchChildren($('#view'), fresh);
    else $('#view').replaceChildren(...fresh.childNodes);
    shown = location.hash;
    const updated = $('#updated');
    updated.dataset.refreshes = String(Number(updated.dataset.refreshes ?? 0) + 1);
    updated.textContent = `updated ${when(new Date().toISOString())}`;
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
  if ($('#live-toggle').checked && (page === 'overview' || page === 'jobs' || page === 'audit' || !page)) pollTimer = setTimeout(route, Math.max(floorMs, 1000));
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
  $('#pause-form').addEventListener('submit', confirmPause);
  $('#pause-cancel').addEventListener('click', () => $('#pause-dialog').close());
  $('#live-toggle').addEventListener('change', route);
  window.addEventListener('hashchange', route);
  if (sessionStorage.getItem(TOKEN_KEY)) start();
  else signOut();
});

function start() {
  $('#sign-in').hidden = true;
  const c = claims();
  const role = roleOf(c);
  $('#who').textContent = `${c.sub ?? '?'} (${role === 'operator' ? 'operator' : role === 'viewer' ? 'read-only' : 'no ops role'})`;
  $('#who').dataset.role = role ?? 'none';
  void route();
}

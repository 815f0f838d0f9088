// The ops console: plain browser JavaScript over /api/ops (no framework, no build step); this file
// holds the audit page, the router, sign-in and sign-out (helpers in core.js, pages in overview.js
// and failures.js). The token lives in sessionStorage and goes in the Authorization header only.
// Pages are hash routes: #overview, #failures[/<kind>], #audit.
'use strict';

async function auditPage() {
  const { items } = await api('/api/ops/audit');
  return el('section', { id: 'audit' }, el('h2', {}, 'Audit'), el('table', { id: 'audit-rows' },
    el('tr', {}, ...['when', 'who', 'role', 'action', 'target', 'filter / params', 'dry run', 'matched', 'changed', 'status', 'answer', 'error'].map((h) => el('th', {}, h))),
    items.map((a) => el('tr', { 'data-action': a.action, 'data-status': a.status, 'data-key': a.id }, el('td', {}, when(a.at)), el('td', {}, a.actor), el('td', {}, a.role), el('td', {}, a.action),
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
    const fresh = el('div', {}, ...[content].flat());
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

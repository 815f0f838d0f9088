// The ops console's shared helpers: elements built with textContent (never innerHTML), the API call
// with the tab's token, formatting. Plain browser scripts (no framework, no build step), loaded in
// order by index.html: core.js, overview.js, failures.js, app.js.
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

// The ops console's shared helpers: elements built with textContent (never innerHTML), the API call
// with the tab's token, formatting. Plain browser scripts (no framework, no build step), loaded in
// order by index.html: core.js, overview.js, failures.js, bulk.js, app.js.
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
    if (k.startsWith('on')) {
      (node.handlers ??= {})[k.slice(2)] = v;
      listen(node, k.slice(2));
    } else node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c !== undefined && c !== null) node.append(c instanceof Node ? c : String(c));
  return node;
}

// One listener per event type, calling the node's current handler: a refresh that keeps the node
// (patch) hands it the handler built with the fresh data.
function listen(node, type) {
  node.listening ??= new Set();
  if (node.listening.has(type)) return;
  node.listening.add(type);
  node.addEventListener(type, (e) => node.handlers?.[type]?.(e));
}

// A live refresh brings the page on screen to look like the one just built, in place: an element
// whose tag (and data-key, for rows) matches is kept and only what differs is written, so the
// keyboard focus, a text selection and a button under the pointer survive the refresh (rebuilding
// the page every 2 s dropped the focus to the body and wiped any selection).
const keyOf = (n) => (n.nodeType === Node.ELEMENT_NODE ? n.getAttribute('data-key') : null);

function patch(live, fresh) {
  if (live.nodeType !== fresh.nodeType || live.nodeName !== fresh.nodeName) {
    live.replaceWith(fresh);
    return;
  }
  if (live.nodeType === Node.TEXT_NODE) {
    if (live.nodeValue !== fresh.nodeValue) live.nodeValue = fresh.nodeValue;
    return;
  }
  if (live.nodeType !== Node.ELEMENT_NODE) return;
  for (const { name } of [...live.attributes]) if (!fresh.hasAttribute(name)) live.removeAttribute(name);
  for (const { name, value } of [...fresh.attributes]) if (live.getAttribute(name) !== value) live.setAttribute(name, value);
  // The fresh element's handlers (they close over the fresh data: Resume, not the Pause of before).
  live.handlers = fresh.handlers ?? {};
  for (const type of Object.keys(live.handlers)) listen(live, type);
  patchChildren(live, fresh);
}

function patchChildren(live, fresh) {
  const old = [...live.childNodes];
  const wanted = [...fresh.childNodes];
  const byKey = new Map(old.filter(keyOf).map((n) => [keyOf(n), n]));
  wanted.forEach((f, i) => {
    const key = keyOf(f);
    const candidate = key !== null ? byKey.get(key) : old[i] && keyOf(old[i]) === null ? old[i] : undefined;
    let node = f;
    if (candidate && candidate.nodeType === f.nodeType && candidate.nodeName === f.nodeName) {
      patch(candidate, f);
      node = candidate;
    }
    if (live.childNodes[i] !== node) live.insertBefore(node, live.childNodes[i] ?? null);
  });
  while (live.childNodes.length > wanted.length) live.lastChild.remove();
}

function claims() {
  try {
    const part = sessionStorage.getItem(TOKEN_KEY).split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    return JSON.parse(atob(part));
  } catch {
    return {};
  }
}
// The role the token's claims give, read as the server reads them (http/auth.ts, opsRoleOf): it
// only decides which buttons are enabled; the API decides what is allowed.
const roleOf = (c) => (c.admin === true || c.ops_role === 'operator' ? 'operator' : c.ops_role === 'viewer' ? 'viewer' : null);
const isOperator = () => roleOf(claims()) === 'operator';

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

// Every time on the page is UTC, and says so: on-call and the logs may sit in different zones.
const when = (iso) => (iso ? `${new Date(iso).toISOString().replace('T', ' ').slice(0, 19)} UTC` : '—');
// Durations for a person: 4 ms, 12 s, 2 min 18 s, 3 h 5 min, 2 d.
function humanDuration(ms) {
  const abs = Math.abs(ms);
  if (abs < 1000) return `${Math.round(abs)} ms`;
  const s = Math.round(abs / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 ? `${m} min ${s % 60} s` : `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 48) return m % 60 ? `${h} h ${m % 60} min` : `${h} h`;
  return `${Math.floor(h / 24)} d`;
}
// "in 8 s" or "3 min ago", measured from `asOf`, a time of the clock that wrote `iso` (the server's
// or the database's), never the browser's own: a laptop's clock may be minutes off.
function relative(iso, asOf) {
  const d = new Date(iso).getTime() - new Date(asOf).getTime();
  return d >= 0 ? `in ${humanDuration(d)}` : `${humanDuration(-d)} ago`;
}
// What a run-now answered, in words: skipped and why, or the outcome, its duration and its counts.
function describeRun(r) {
  const why = { paused: 'the job is paused: resume it first', already_running: 'a run is going on this replica', runner_stopped: 'this replica is stopping' };
  if (r.outcome === 'skipped') return `skipped: ${why[r.skipReason] ?? 'another replica holds its lock (a run is going there)'}`;
  const counts = Object.entries(r.counts ?? {}).map(([k, v]) => `${k}=${v}`).join(' ');
  return `${r.outcome} in ${humanDuration(r.durationMs)}${counts ? `: ${counts}` : ' (no work)'}${r.error ? ` — ${r.error}` : ''}`;
}
// A metric value for a person: seconds as a duration, counts with separators, never 137.7130000591278.
function formatValue(value, seconds) {
  if (value === null || value === undefined) return '—';
  if (!Number.isFinite(value)) return String(value);
  if (seconds) return humanDuration(value * 1000);
  return Number.isInteger(value) ? value.toLocaleString('en-US') : value.toLocaleString('en-US', { maximumFractionDigits: 2 });
}
// A sparkline of a series' recent past: inline SVG built node by node (no chart library, nothing
// inline for the CSP to refuse; its colour comes from app.css, so dark mode restyles it).
const SVG = 'http://www.w3.org/2000/svg';
function sparkline(values, spanSeconds, seconds) {
  if (values.length < 2) return el('span', { class: 'muted spark-none' }, '—');
  const [w, h] = [120, 24];
  const max = Math.max(...values, 0);
  const min = Math.min(...values, 0);
  const y = (v) => (max === min ? h - 1 : h - 1 - ((v - min) / (max - min)) * (h - 2));
  const points = values.map((v, i) => `${((i / (values.length - 1)) * (w - 2) + 1).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
  const svg = document.createElementNS(SVG, 'svg');
  const say = `last ${humanDuration(spanSeconds * 1000)}: from ${formatValue(values[0], seconds)} to ${formatValue(values[values.length - 1], seconds)}, peak ${formatValue(max, seconds)}`;
  for (const [k, v] of Object.entries({ class: 'spark', viewBox: `0 0 ${w} ${h}`, width: w, height: h, role: 'img', 'aria-label': say, 'data-points': values.length })) svg.setAttribute(k, String(v));
  const title = document.createElementNS(SVG, 'title');
  title.textContent = say;
  const line = document.createElementNS(SVG, 'polyline');
  line.setAttribute('points', points);
  svg.append(title, line);
  return svg;
}

// A table's header row: each column's header says so (scope), for screen readers and the eye.
const headRow = (names) => el('tr', {}, names.map((h) => el('th', { scope: 'col' }, h)));
const labelText = (labels) => Object.entries(labels).map(([k, v]) => `${k}=${v}`).join(' ') || '—';
// The runbook opens in the console (#runbook/<alert>, rendered by the server under the same CSP).
const runbookLink = (alert) => el('a', { href: `#runbook/${alert}`, class: 'runbook' }, `runbook ${alert}`);
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

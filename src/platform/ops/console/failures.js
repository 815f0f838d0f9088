// The failures pages: the kinds; one kind's rows under a filter, a page at a time, with the bulk
// panel (bulk.js) on top, each row ticked, opened or acted on; one row's detail (#failures/<kind>/<id>,
// a link that reopens it on reload).
'use strict';

const FILTER_KEYS = ['from', 'to', 'errorCode', 'field', 'value'];

async function failureKindsPage() {
  const { kinds } = await api('/api/ops/failures');
  return el('section', { id: 'failure-kinds' }, el('h2', {}, 'Failures you can act on'), el('table', {},
    headRow(['kind', 'rows now', 'runbook']),
    kinds.map((k) => el('tr', { 'data-kind': k.kind }, el('th', { scope: 'row' }, el('a', { href: `#failures/${k.kind}` }, k.title)),
      el('td', { class: k.count > 0 ? 'num bad' : 'num' }, k.count === null ? '?' : String(k.count)), el('td', {}, runbookLink(k.alert))))));
}

function filterForm(kind, query) {
  const input = (name, placeholder) => [el('label', { for: `filter-${name}` }, `${name} `), el('input', { id: `filter-${name}`, name, placeholder, value: query.get(name) ?? '' })];
  const field = el('select', { id: 'filter-field', name: 'field' }, el('option', { value: '' }, '(any)'), kind.fields.map((f) => el('option', { value: f, selected: query.get('field') === f }, f)));
  return el('form', { class: 'filters', id: 'filters', onsubmit: (e) => {
    e.preventDefault();
    const q = new URLSearchParams([...new FormData(e.target)].filter(([, v]) => v !== ''));
    location.hash = `#failures/${kind.kind}?${q}`;
  } }, input('from', 'ISO time'), input('to', 'ISO time'), input('errorCode', 'code'), el('label', { for: 'filter-field' }, 'field '), field, input('value', 'value'), el('button', { type: 'submit' }, 'Filter'));
}

const fieldsText = (fields) => Object.entries(fields).filter(([, v]) => v !== null).map(([k, v]) => `${k}=${v}`).join(' ');

// One row's actions (requeue, discard, …): each asks first, then runs on that row alone (filter.ids),
// audited as any bulk action; `done` refreshes what shows the row.
function rowActions(kind, id, done) {
  const out = el('span', { class: 'row-answer', role: 'status' });
  const run = async (action) => {
    try {
      const started = await api(`/api/ops/failures/${kind.kind}/actions`, { method: 'POST', body: { action, filter: { ids: [id] }, dryRun: false, max: 1 } });
      const end = await followProgress(started.auditId, out, null);
      if (end.status === 'done') await done(action);
    } catch (err) {
      showError(err);
    }
  };
  const ask = (action) => out.replaceChildren(`${action} ${id}? `,
    actButton(`Confirm ${action}`, 'row-confirm', () => void run(action)), el('button', { type: 'button', 'data-act': 'row-cancel', onclick: () => out.replaceChildren() }, 'Cancel'));
  return el('span', { class: 'row-actions' }, kind.actions.map((a) => actButton(a, `row-${a}`, () => ask(a))), out);
}

function rowsTable(list, selection, onSelect, refresh) {
  const tick = (id) => el('input', { type: 'checkbox', class: 'pick', 'aria-label': `select ${id}`, checked: selection.has(id), onchange: (e) => onSelect([id], e.target.checked) });
  const all = el('input', { type: 'checkbox', id: 'pick-page', 'aria-label': 'select every row of this page', onchange: (e) => onSelect(list.items.map((r) => r.id), e.target.checked) });
  return el('table', { id: 'failure-rows' }, headRow([all, 'id', 'failed at', 'error', 'fields', 'links', 'actions']),
    list.items.map((r) => el('tr', { 'data-id': r.id }, el('td', {}, tick(r.id)),
      el('th', { scope: 'row' }, el('a', { href: `#failures/${list.kind.kind}/${encodeURIComponent(r.id)}`, class: 'open-row' }, r.id)),
      el('td', {}, when(r.at)), el('td', { class: 'code' }, r.errorCode ?? ''), el('td', { class: 'fields' }, fieldsText(r.fields)),
      el('td', {}, r.traceUrl ? el('a', { href: r.traceUrl, target: '_blank', rel: 'noopener' }, 'trace') : '', ' ', runbookLink(list.kind.alert)),
      el('td', {}, rowActions(list.kind, r.id, refresh)))));
}

async function failuresPage(kindName, query) {
  const apiQuery = new URLSearchParams([...query].filter(([k]) => FILTER_KEYS.includes(k)));
  const after = query.get('after');
  // The page's size and start travel in the link too (a page reloads as itself), not in the filter.
  const paging = new URLSearchParams([...query].filter(([k]) => k === 'limit'));
  const load = () => api(`/api/ops/failures/${kindName}?${apiQuery}&${paging}${after ? `&after=${encodeURIComponent(after)}` : ''}`);
  const list = await load();
  const filter = Object.fromEntries(apiQuery);
  const selection = new Set();
  const title = el('h2', { id: 'failures-title' }, `${list.kind.title}: ${list.total}`);
  const rows = el('section', { id: 'failure-list' });
  let bulk;
  const onSelect = (ids, on) => {
    for (const id of ids) (on ? selection.add(id) : selection.delete(id));
    for (const box of rows.querySelectorAll('tr[data-id] input.pick')) box.checked = selection.has(box.closest('tr').dataset.id);
    bulk.setSelection?.([...selection]);
  };
  // After an action: the count and the rows as they are now, the panel's answer kept.
  const refresh = async () => {
    const now = await load();
    title.textContent = `${now.kind.title}: ${now.total}`;
    for (const id of [...selection]) if (!now.items.some((r) => r.id === id)) selection.delete(id);
    rows.replaceChildren(...pageOf(now));
    labelCells(rows);
    bulk.setSelection?.([...selection]);
  };
  const pageOf = (l) => [rowsTable(l, selection, onSelect, refresh), pager(kindName, new URLSearchParams([...apiQuery, ...paging]), after, l)];
  rows.replaceChildren(...pageOf(list));
  bulk = list.kind.actions.length > 0 ? bulkPanel(list.kind, filter, refresh) : el('p', { id: 'read-only-kind' }, 'Read-only: the runbook says how to act on these.');
  const form = filterForm(list.kind, query);
  form.addEventListener('input', () => bulk.markStale?.());
  return [el('section', { id: 'failures' }, title, form), bulk, rows];
}

// The pages: the next one from the API's cursor, the first one again; each a link, so a page reloads as itself.
function pager(kindName, apiQuery, after, list) {
  const base = `#failures/${kindName}?${apiQuery}`;
  const shown = list.items.length ? `rows ${list.items.length} shown of ${list.total}` : 'no rows on this page';
  return el('p', { id: 'pager' }, after ? el('a', { href: base, id: 'page-first' }, '« first page') : '', after ? ' ' : '', shown,
    list.next ? [' ', el('a', { href: `${base}&after=${encodeURIComponent(list.next)}`, id: 'page-next' }, 'next page »')] : '');
}

async function failureDetailPage(kindName, id) {
  const { kind, row } = await api(`/api/ops/failures/${kindName}/rows/${encodeURIComponent(id)}`);
  const gone = el('p', { id: 'row-gone', role: 'status' });
  const pairs = [['id', row.id], ['failed at', when(row.at)], ['error code', row.errorCode ?? '—'], ...Object.entries(row.fields).map(([k, v]) => [k, v === null ? '—' : String(v)])];
  return el('section', { id: 'failure-detail', 'data-id': row.id },
    el('h2', {}, `${kind.title}: ${row.id}`),
    el('p', {}, el('a', { href: `#failures/${kind.kind}` }, `« every ${kind.kind} row`)),
    el('dl', { id: 'row-fields' }, pairs.flatMap(([k, v]) => [el('dt', {}, k), el('dd', { 'data-field': k }, v)])),
    el('p', { id: 'row-links' }, row.traceUrl ? [el('a', { href: row.traceUrl, target: '_blank', rel: 'noopener', id: 'row-trace' }, 'trace'), ' '] : 'no trace recorded for this row ',
      runbookLink(kind.alert), ' ', kind.worker ? el('a', { href: `#jobs/${kind.worker}`, id: 'row-worker' }, `worker job ${kind.worker}`) : ''),
    kind.actions.length ? el('p', { id: 'row-act' }, rowActions(kind, row.id, (action) => {
      gone.textContent = `${action}: done; this row is no longer failed.`;
    })) : el('p', {}, 'Read-only: the runbook says how to act on these.'), gone);
}

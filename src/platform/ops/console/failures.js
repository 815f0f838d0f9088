// The failures pages: the kinds, and one kind's rows under a filter with the bulk panel (bulk.js) on top.
'use strict';

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

function rowsTable(list) {
  return el('table', { id: 'failure-rows' }, el('tr', {}, ...['id', 'failed at', 'error', 'fields', '', ''].map((h) => el('th', {}, h))),
    list.items.map((r) => el('tr', { 'data-id': r.id }, el('td', {}, r.id), el('td', {}, when(r.at)), el('td', {}, r.errorCode ?? ''),
      el('td', {}, Object.entries(r.fields).filter(([, v]) => v !== null).map(([k, v]) => `${k}=${v}`).join(' ')),
      el('td', {}, r.traceUrl ? el('a', { href: r.traceUrl, target: '_blank' }, 'trace') : ''), el('td', {}, runbookLink(list.kind.alert)))));
}

async function failuresPage(kindName, query) {
  const api_query = new URLSearchParams([...query].filter(([k]) => ['from', 'to', 'errorCode', 'field', 'value'].includes(k)));
  const load = () => api(`/api/ops/failures/${kindName}?${api_query}`);
  const list = await load();
  const filter = Object.fromEntries(api_query);
  const title = el('h2', { id: 'failures-title' }, `${list.kind.title}: ${list.total}`);
  const rows = el('section', { id: 'failure-list' }, rowsTable(list));
  // After a bulk action: the count and the rows as they are now, the panel's answer kept.
  const refresh = async () => {
    const now = await load();
    title.textContent = `${now.kind.title}: ${now.total}`;
    rows.replaceChildren(rowsTable(now));
  };
  const bulk = list.kind.actions.length > 0 ? bulkPanel(list.kind, filter, refresh) : el('p', { id: 'read-only-kind' }, 'Read-only: the runbook says how to act on these.');
  const form = filterForm(list.kind, query);
  form.addEventListener('input', () => bulk.markStale?.());
  return [el('section', { id: 'failures' }, title, form), bulk, rows];
}

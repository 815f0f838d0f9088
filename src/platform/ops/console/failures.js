// The failures pages: the kinds, one kind's rows under a filter, and the bulk action on that filter.
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

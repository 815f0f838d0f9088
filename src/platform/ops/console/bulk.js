// The bulk action panel of a failures page: on top of the rows, it restates the filter it acts on
// (the one applied, not what the form holds now), dry-runs it, asks to confirm with the count, runs
// it with its progress, then says what happens next and refreshes the counts.
'use strict';

const filterText = (filter) => {
  const parts = Object.entries(filter).map(([k, v]) => `${k}=${v}`);
  return parts.length ? parts.join(', ') : 'no filter: every row of this kind';
};

// What happens to the rows once retried or requeued: they are due now, and the kind's worker job
// takes them up at its next run; a person may run it now instead of waiting.
async function nextStep(kind, box, refresh) {
  if (!kind.worker) {
    box.append(el('p', { id: 'bulk-next' }, 'Each replayed record is back on its topic: its consumer reads it next.'));
    return;
  }
  const { jobs } = await api('/api/ops/jobs');
  const job = jobs.find((j) => j.name === kind.worker);
  const due = 'The rows are due now; ';
  const answer = el('span', { id: 'worker-answer', role: 'status' });
  if (!job || job.pausedAt) {
    box.append(el('p', { id: 'bulk-next' }, `${due}${kind.worker} ${job ? 'is paused: resume it (Overview) to take them up' : 'does not run on this replica'}.`));
    return;
  }
  const next = job.nextRunAt ? `${job.name} runs next at ${when(job.nextRunAt)}` : `${job.name} has no timer on this replica`;
  box.append(el('p', { id: 'bulk-next' }, `${due}${next} — run it now? `,
    actButton(`Run ${job.name} now`, 'run-worker', async () => {
      try {
        answer.textContent = `${job.name}: ${describeRun(await api(`/api/ops/jobs/${job.name}/run`, { method: 'POST' }))}`;
        await refresh();
      } catch (err) {
        showError(err);
      }
    }), ' ', answer));
}

// `id`: the bulk panel's one progress line has an id; a row's (several may show) has none.
async function followProgress(auditId, out, id = 'bulk-progress') {
  for (;;) {
    const a = await api(`/api/ops/audit/${auditId}`);
    out.replaceChildren(el('p', { id, class: 'progress', 'data-status': a.status }, `${a.action}: ${a.changed} of ${a.matched} changed — ${a.status}${a.error ? ` (${a.error})` : ''}`));
    // Done, failed (also when a replica found its process gone) or refused: nothing more to follow;
    // nor once the panel is gone (another page or filter).
    if (a.status !== 'running' || !out.isConnected) return a;
    await new Promise((r) => setTimeout(r, 500));
  }
}

function bulkPanel(kind, filter, refresh) {
  const out = el('div', { id: 'bulk-result', role: 'status' });
  const stale = el('p', { id: 'bulk-stale', class: 'bad', hidden: true }, 'The filter form was changed but not applied: press Filter first, then dry-run again.');
  const action = el('select', { id: 'bulk-action' }, kind.actions.map((a) => el('option', { value: a }, a)));
  const max = el('input', { id: 'bulk-max', type: 'number', min: 1, max: 10000, value: 1000 });
  // Rows ticked in the list take the place of the filter: the panel then acts on those alone.
  let picked = [];
  const target = () => (picked.length ? { ids: picked } : filter);
  const targetText = () => (picked.length ? `the ${picked.length} row${picked.length === 1 ? '' : 's'} ticked below` : filterText(filter));
  const body = (dryRun) => ({ action: action.value, filter: target(), dryRun, max: Number(max.value) || 1000 });
  let counted = null;
  const reset = () => {
    counted = null;
    run.disabled = true;
  };
  // Not through act(): the page is not re-rendered, so the progress stays in view until it ends.
  const confirmRun = async () => {
    try {
      const started = await api(`/api/ops/failures/${kind.kind}/actions`, { method: 'POST', body: body(false) });
      reset();
      const end = await followProgress(started.auditId, out);
      if (end.status !== 'done' || !out.isConnected) return;
      await refresh();
      await nextStep(kind, out, refresh);
    } catch (err) {
      showError(err);
    }
  };
  const run = actButton('Run…', 'bulk-run', () => {
    if (!counted) return;
    const what = `${counted.action} ${counted.wouldChange} row${counted.wouldChange === 1 ? '' : 's'}`;
    out.replaceChildren(el('p', { id: 'bulk-confirm-text' }, `${what[0].toUpperCase()}${what.slice(1)} of ${kind.kind} (${targetText()})?`),
      actButton(`Confirm: ${what}`, 'bulk-confirm', () => {
        run.disabled = true;
        void confirmRun();
      }),
      el('button', { type: 'button', 'data-act': 'bulk-cancel', onclick: () => out.replaceChildren() }, 'Cancel'));
  });
  run.disabled = true;
  const dry = actButton('Dry run', 'dry-run', async () => {
    try {
      const r = await api(`/api/ops/failures/${kind.kind}/actions`, { method: 'POST', body: body(true) });
      counted = { action: action.value, wouldChange: r.wouldChange };
      out.replaceChildren(el('p', { id: 'dry-run-result' }, `${r.wouldChange} of ${r.matched} rows would change (${action.value})`),
        el('ul', {}, r.sample.map((s) => el('li', {}, `${s.id} ${s.errorCode ?? ''}`))));
      run.disabled = r.wouldChange === 0 || !isOperator();
    } catch (err) {
      showError(err);
    }
  });
  // A count taken for another action or maximum no longer says what Run would do.
  action.addEventListener('change', reset);
  max.addEventListener('input', reset);
  const restated = el('p', { id: 'bulk-filter' }, `Acts on the applied filter: ${filterText(filter)}`);
  const panel = el('section', { id: 'bulk' }, el('h2', {}, 'Bulk action'), restated, stale,
    el('label', { for: 'bulk-action' }, 'action '), action, ' ', el('label', { for: 'bulk-max' }, 'at most '), max, ' rows ', dry, run, out);
  // Called when rows are ticked or unticked: a count taken before no longer says what Run would do.
  panel.setSelection = (ids) => {
    if (ids.join() === picked.join()) return;
    picked = ids;
    restated.textContent = picked.length ? `Acts on ${targetText()} (not the filter)` : `Acts on the applied filter: ${filterText(filter)}`;
    reset();
  };
  // Called when the filter form is edited: the panel acts on the filter applied, not the one typed.
  panel.markStale = () => {
    stale.hidden = false;
    dry.disabled = true;
    reset();
  };
  return panel;
}

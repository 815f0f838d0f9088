// The overview page: alerts, jobs (run now, pause, resume), backlogs, replicas, dependencies.
'use strict';

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

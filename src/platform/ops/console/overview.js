// The overview page: alerts, jobs (run now, pause, resume), backlogs, replicas, dependencies.
'use strict';

// The lock as it stands (the API reads pg_locks): a lease row outlives its run, so its expiry alone
// would show a job that ran for 4 ms as held for minutes.
function leaseText(j) {
  const l = j.lease;
  if (!j.singleRunner) return { text: 'every replica runs it', state: 'none' };
  if (!l) return { text: 'never held', state: 'none' };
  if (l.state === 'held') return { text: `held by ${l.holder}, lease ends ${relative(l.expiresAt, l.asOf)}`, state: 'held' };
  if (l.state === 'expired') return { text: `expired ${relative(l.expiresAt, l.asOf)}: ${l.holder} still holds the lock but stopped renewing (frozen or stuck; the next replica to try takes it over)`, state: 'expired' };
  return { text: `released (last taken by ${l.holder} ${relative(l.acquiredAt, l.asOf)})`, state: 'released' };
}

function nextRunText(j, generatedAt) {
  if (j.pausedAt) return 'none while paused';
  if (!j.nextRunAt) return '— (no timer on this replica)';
  return `${relative(j.nextRunAt, generatedAt)} (${when(j.nextRunAt)})`;
}

// The last run-now answer, kept across the page's refreshes until another replaces it.
let jobAnswer = '';

async function runJob(name) {
  jobAnswer = `${name}: ${describeRun(await api(`/api/ops/jobs/${name}/run`, { method: 'POST' }))}`;
}

// Pause asks first: why, and when it should end; both show here and in the alerts watching the job.
function askPause(name) {
  const dialog = $('#pause-dialog');
  $('#pause-job').textContent = name;
  $('#pause-reason').value = '';
  dialog.dataset.job = name;
  dialog.showModal();
}

async function confirmPause(e) {
  e.preventDefault();
  const dialog = $('#pause-dialog');
  const minutes = Number($('#pause-minutes').value);
  const until = minutes > 0 ? new Date(Date.now() + minutes * 60_000).toISOString() : undefined;
  dialog.close();
  await act(() => api(`/api/ops/jobs/${dialog.dataset.job}/pause`, { method: 'POST', body: { reason: $('#pause-reason').value, ...(until ? { until } : {}) } }));
}

function pauseText(j, generatedAt) {
  if (!j.pausedAt) return 'active';
  const end = !j.pauseUntil ? 'no expected end'
    : new Date(j.pauseUntil) < new Date(generatedAt) ? `expected end passed ${relative(j.pauseUntil, generatedAt).replace(' ago', '')} ago (${when(j.pauseUntil)})`
    : `expected end ${relative(j.pauseUntil, generatedAt)} (${when(j.pauseUntil)})`;
  return `paused by ${j.pausedBy} since ${when(j.pausedAt)}: ${j.pauseReason ?? 'no reason given'}; ${end}`;
}

function jobActions(j) {
  return [actButton('Run now', 'run', () => act(() => runJob(j.name))),
    j.pausedAt
      ? actButton('Resume', 'resume', () => act(() => api(`/api/ops/jobs/${j.name}/resume`, { method: 'POST' })))
      : actButton('Pause…', 'pause', () => askPause(j.name))];
}

function jobsSection(jobs, generatedAt) {
  const rows = jobs.map((j) => {
    const last = j.recentRuns[0];
    const lease = leaseText(j);
    return el('tr', { 'data-job': j.name, 'data-key': j.name },
      el('th', { scope: 'row' }, el('a', { href: `#jobs/${j.name}`, class: 'job-link' }, j.name)), el('td', {}, j.schedule.description),
      el('td', { class: j.pausedAt ? 'bad paused' : 'ok' }, pauseText(j, generatedAt)),
      el('td', { class: `lease ${lease.state === 'expired' ? 'bad' : ''}`, 'data-lease': lease.state }, lease.text),
      el('td', { class: 'next-run' }, nextRunText(j, generatedAt)),
      el('td', { class: j.lastOutcome === 'failure' ? 'bad' : '' }, `${j.lastOutcome ?? '—'} ${when(j.lastRunAt)}`),
      el('td', {}, last ? `${humanDuration(last.durationMs)} ${labelText(last.counts)}` : '—'),
      el('td', { class: 'num' }, `${j.failuresTotal}/${j.runsTotal}`),
      el('td', {}, j.lastError ?? ''),
      el('td', {}, jobActions(j)));
  });
  return el('section', { id: 'jobs' }, el('h2', {}, 'Jobs'), el('p', { id: 'job-answer', role: 'status' }, jobAnswer), el('table', {},
    headRow(['job', 'schedule', 'state', 'lock', 'next run', 'last run', 'last run with work', 'failed/runs', 'last error', 'actions']), rows));
}

const isSeconds = (metric) => metric.endsWith('_seconds');

// Every backlog series; a non-zero one stands out (most are 0 most of the time).
function backlogSection(backlogs, trendSeconds) {
  const rows = backlogs.flatMap((b) => (b.series.length ? b.series : [{ labels: {}, value: null, trend: [] }]).map((s) =>
    el('tr', { 'data-metric': b.metric, 'data-key': `${b.metric}${JSON.stringify(s.labels)}`, class: s.value > 0 ? 'nonzero' : null }, el('th', { scope: 'row' }, b.title), el('td', {}, labelText(s.labels)),
      el('td', { class: 'num value' }, formatValue(s.value, isSeconds(b.metric))), el('td', { class: 'trend' }, sparkline(s.trend, trendSeconds, isSeconds(b.metric))),
      el('td', {}, b.alert ? runbookLink(b.alert) : ''))));
  return el('section', { id: 'backlogs' }, el('h2', {}, 'Backlogs'), el('table', {},
    headRow(['backlog', 'labels', 'now', 'trend', 'runbook']), rows));
}

const plannedPause = (a) => a.annotations.pause !== undefined && a.annotations.pause_overdue !== 'true';
const SEVERITY_RANK = { critical: 0, warning: 1, info: 2 };
// Worst first: an alert no planned pause explains, firing before pending, critical before warning.
const alertRank = (a) => [plannedPause(a) ? 1 : 0, a.state === 'firing' ? 0 : 1, SEVERITY_RANK[a.severity] ?? 3];
function byWorst(a, b) {
  const [x, y] = [alertRank(a), alertRank(b)];
  const i = x.findIndex((v, k) => v !== y[k]);
  return i >= 0 ? x[i] - y[i] : a.alert.localeCompare(b.alert);
}
// The value in its unit: the rules that compare seconds read a *_seconds series or time().
const alertValue = (a) => formatValue(a.value, /_seconds|time\(\)/.test(a.expr));

// An alert watching a job an operator paused carries the pause (who, why, expected end): told
// apart from an outage here as in its annotations, until the expected end passes.
function alertSection(view) {
  const rows = [...view.alerts].sort(byWorst).map((a) => {
    const planned = plannedPause(a);
    return el('tr', { 'data-alert': a.alert, 'data-key': `${a.alert}${JSON.stringify(a.labels)}`, 'data-paused': a.annotations.pause ? 'true' : null },
      el('td', { class: planned ? 'pending' : a.state === 'firing' ? 'bad' : 'pending' }, planned ? `${a.state} (planned pause)` : a.state), el('td', {}, a.alert), el('td', {}, a.severity),
      el('td', {}, labelText(a.labels)), el('td', { class: 'num value' }, alertValue(a)), el('td', {}, `since ${when(a.activeSince)}`), el('td', {}, runbookLink(a.alert)),
      el('td', { class: 'pause-note' }, a.annotations.pause ?? ''));
  });
  // Rules a planned pause holds back (job_paused): silent by design, listed so on-call sees why.
  const held = view.held.map((h) => el('tr', { 'data-alert': h.alert, 'data-key': `held${h.alert}${JSON.stringify(h.labels)}`, 'data-paused': 'true', 'data-held': 'true' },
    el('td', { class: 'muted' }, 'held back (planned pause)'), el('td', {}, h.alert), el('td', {}, h.severity), el('td', {}, labelText(h.labels)),
    el('td', {}, '—'), el('td', {}, '—'), el('td', {}, runbookLink(h.alert)), el('td', { class: 'pause-note' }, h.annotations.pause ?? '')));
  rows.push(...held);
  const firing = view.alerts.filter((a) => a.state === 'firing').length;
  return el('section', { id: 'alerts' }, el('h2', {}, `Alerts that would fire now: ${firing} firing, ${view.alerts.length - firing} pending${held.length ? `, ${held.length} held back by a planned pause` : ''} (${view.rules} rules, ${humanDuration(view.historySeconds * 1000)} of samples)`),
    rows.length ? el('table', {}, headRow(['state', 'alert', 'severity', 'labels', 'value', 'active', 'runbook', 'planned pause']), rows) : el('p', { class: 'ok' }, 'none'),
    view.errors.length ? el('p', { class: 'bad' }, `not evaluated: ${view.errors.map((e) => e.alert).join(', ')}`) : '');
}

// One glance before the tables: the worst alert, the dependencies down, the backlogs not at zero.
function statusLine(o) {
  const worst = [...o.alerts.alerts].sort(byWorst)[0];
  const down = Object.entries(o.dependencies).filter(([, v]) => v === 'down').map(([k]) => k);
  const backlog = o.backlogs.flatMap((b) => b.series.filter((s) => s.value > 0).map((s) =>
    `${b.title}${Object.keys(s.labels).length ? ` (${labelText(s.labels)})` : ''}: ${formatValue(s.value, isSeconds(b.metric))}`));
  const more = o.alerts.alerts.length > 1 ? ` (+${o.alerts.alerts.length - 1} more)` : '';
  const bad = (worst && worst.state === 'firing' && !plannedPause(worst)) || down.length > 0;
  return el('section', { id: 'status-line', class: bad ? 'bad' : 'ok' },
    el('p', { id: 'status-alert' }, worst ? `Worst alert: ${worst.state} ${worst.severity} ${worst.alert}${plannedPause(worst) ? ' (planned pause)' : ''}: ${worst.summary}${more}` : 'No alert would fire.'),
    el('p', { id: 'status-deps' }, down.length ? `Dependencies down: ${down.join(', ')}` : 'No dependency down.'),
    el('p', { id: 'status-backlogs' }, backlog.length ? `Non-zero backlogs: ${backlog.join('; ')}` : 'Every backlog at zero.'));
}

async function overviewPage() {
  const o = await api('/api/ops/overview');
  floorMs = o.pollFloorMs;
  return [
    statusLine(o),
    alertSection(o.alerts),
    jobsSection(o.jobs, o.generatedAt),
    backlogSection(o.backlogs, o.trendSeconds),
    el('section', { id: 'replicas' }, el('h2', {}, 'Hub connections per replica'), el('table', {},
      headRow(['replica', 'hub connections', 'last seen']),
      o.replicas.map((r) => el('tr', { 'data-key': r.holder }, el('td', {}, r.holder + (r.current ? ' (this one)' : '')), el('td', { class: 'num' }, String(r.hubConnections)), el('td', {}, when(r.seenAt)))))),
    el('section', { id: 'dependencies' }, el('h2', {}, 'Dependencies (/health/ready)'), el('table', {},
      headRow(['dependency', 'status']),
      // Only "ok" is green: "disabled" (a part turned off) is neither up nor down.
      Object.entries(o.dependencies).map(([k, v]) => el('tr', { 'data-key': k, 'data-dependency': k }, el('td', {}, k), el('td', { class: v === 'down' ? 'bad' : v === 'ok' ? 'ok' : 'muted' }, v))))),
  ];
}

// One job (#jobs/<name>, a link that reopens it): its state, lock, next run, recent runs, the alerts
// watching it, and its actions; live like the overview.
async function jobPage(name) {
  const o = await api('/api/ops/overview');
  floorMs = o.pollFloorMs;
  const j = o.jobs.find((x) => x.name === name);
  if (!j) throw Object.assign(new Error(`JOB_NOT_FOUND: no job named ${name}`), { status: 404 });
  const lease = leaseText(j);
  const pairs = [['schedule', j.schedule.description], ['state', pauseText(j, o.generatedAt)], ['lock', lease.text], ['next run', nextRunText(j, o.generatedAt)],
    ['last success', when(j.lastSuccessAt)], ['failed/runs', `${j.failuresTotal}/${j.runsTotal}`], ['last error', j.lastError ?? '—']];
  const watching = [...o.alerts.alerts, ...o.alerts.held].filter((a) => a.labels.job === name || (a.expr ?? '').includes(`job="${name}"`) || a.annotations.pause?.includes(` of ${name} `));
  return el('section', { id: 'job-detail', 'data-job': name },
    el('h2', {}, `Job ${name}`), el('p', {}, el('a', { href: '#overview' }, '« overview')),
    el('dl', { id: 'job-fields' }, pairs.flatMap(([k, v]) => [el('dt', {}, k), el('dd', { 'data-field': k }, v)])),
    el('p', {}, jobActions(j)), el('p', { id: 'job-answer', role: 'status' }, jobAnswer),
    el('h3', {}, 'Alerts watching it'), watching.length ? el('ul', {}, watching.map((a) => el('li', { 'data-key': a.alert }, `${a.alert}: ${a.state ?? 'held back (planned pause)'} `, runbookLink(a.alert)))) : el('p', { class: 'ok' }, 'none would fire now'),
    el('h3', {}, 'Recent runs'), el('table', { id: 'job-runs' }, headRow(['at', 'outcome', 'duration', 'counts', 'error']),
      j.recentRuns.map((r) => el('tr', { 'data-key': r.at }, el('th', { scope: 'row' }, when(r.at)), el('td', { class: r.outcome === 'failure' ? 'bad' : '' }, r.outcome),
        el('td', { class: 'num' }, humanDuration(r.durationMs)), el('td', {}, labelText(r.counts)), el('td', {}, r.error ?? '')))));
}

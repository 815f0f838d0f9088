import type { JobInfo } from '../jobs/index.ts';
import { ALERT_RULES } from './alert-rules.ts';
import type { AlertRule, AlertsView, AlertState } from './alerts.ts';

/**
 * A job an operator paused stops its runs, so the alerts watching it fire (the realtime
 * dispatcher's MessengerRealtimeDispatchNotRunning after a minute or two): on-call must tell that
 * planned pause from an outage. Every alert that reads a paused job's own series — its `job`
 * label, or a `job="<name>"` selector in its expression — gets the pause in its annotations: who, why, since when and the expected end; a pause past its expected
 * end says so, since by then the silence may no longer be the plan.
 */

const iso = (d: Date | string): string => new Date(d).toISOString();

/** Whether `alert` watches `job`. */
// Not the rule's group: a group named after a job also holds alerts a pause does not explain
// (Quarantined rows), which would then read as planned.
export function alertWatchesJob(alert: Pick<AlertState, 'labels' | 'expr'>, job: string): boolean {
  return alert.labels.job === job || alert.expr.includes(`job="${job}"`);
}

/** The annotations a pause gives an alert; the sentence is what a pager or the console shows. */
export function pauseAnnotations(job: Pick<JobInfo, 'name' | 'pausedAt' | 'pausedBy' | 'pauseReason' | 'pauseUntil'>, now: Date): Record<string, string> {
  const reason = job.pauseReason ?? 'no reason given';
  const until = job.pauseUntil ? new Date(job.pauseUntil) : null;
  const end = !until ? 'no expected end (until resumed)' : until < now ? `expected end ${iso(until)} has passed: check whether this is still the plan` : `expected end ${iso(until)}`;
  return {
    pause: `planned pause of ${job.name} by ${job.pausedBy ?? 'unknown'} since ${job.pausedAt ? iso(job.pausedAt) : '?'}: ${reason}; ${end}`,
    pause_reason: reason,
    pause_until: until ? iso(until) : '',
    ...(until && until < now ? { pause_overdue: 'true' } : {}),
  };
}

/**
 * The view with the pause of each paused job in the annotations of the alerts watching it; and, in
 * `held`, the rules a planned pause holds back (they read `job_paused{job="<name>"}`, deploy/prometheus),
 * so the console still says which alert the pause keeps silent and why. A replica whose runner has
 * not read the pause yet (job_paused 0 there) shows the alert as it fires, annotated.
 */
export function annotatePauses(view: AlertsView, jobs: readonly JobInfo[], now: Date, rules: readonly AlertRule[] = ALERT_RULES): AlertsView {
  const paused = jobs.filter((j) => j.pausedAt);
  if (paused.length === 0) return view;
  const alerts = view.alerts.map((a) => {
    const job = paused.find((j) => alertWatchesJob(a, j.name));
    return job ? { ...a, annotations: { ...a.annotations, ...pauseAnnotations(job, now) } } : a;
  });
  const held = paused.flatMap((job) => {
    const annotations = pauseAnnotations(job, now);
    if (annotations.pause_overdue) return [];
    return rules
      .filter((r) => r.expr.includes(`job_paused{job="${job.name}"}`) && !alerts.some((a) => a.alert === r.alert))
      .map(({ alert, severity, summary, runbook }) => ({ alert, severity, summary, runbook, labels: { job: job.name }, annotations }));
  });
  return { ...view, alerts, held };
}

import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Db } from '../db/index.ts';
import { AppError, errorCodes } from '../http/index.ts';
import type { JobInfo, JobPause, RunResult } from '../jobs/index.ts';
import { newId, type Clock } from '../time.ts';
import { annotatePauses } from './alert-pauses.ts';
import type { AlertsView } from './alerts.ts';
import { AuditParams, AuditQuery, JobName, OpsAlerts, OpsAuditEntry, OpsAuditList, OpsJobList, OpsOverview, OpsPauseBody, OpsPauseState, OpsRunResult } from './api-schemas.ts';
import { insertAudit, listAudit, readAudit, type NewAuditEntry } from './audit-sql.ts';
import { cursorOf, cursorText } from './keyset.ts';
import type { Logger } from '../observability/index.ts';
import type { ActorNames } from './types.ts';
import { jobsWithLeases, type Overview } from './overview.ts';
import { OPS_DEFAULTS } from './defaults.ts';

/** What the ops routes need from the job runner. */
export interface JobsOps {
  list(): Promise<JobInfo[]>;
  runNow(name: string): Promise<RunResult>;
  has(name: string): boolean;
  setPaused(name: string, pause: JobPause | null): Promise<void>;
}

export interface OpsRouteDeps {
  db: Db;
  log: Logger;
  clock: Clock;
  jobs: JobsOps;
  overview: () => Promise<Overview>;
  alerts: () => AlertsView;
  actorNames: () => readonly ActorNames[];
}

/** The actors' display names where a module knows them; one that cannot answer now leaves the ids (the page still loads). */
async function namesOf(ctx: OpsRouteDeps, ids: string[]): Promise<Map<string, string>> {
  const names = new Map<string, string>();
  const uuids = [...new Set(ids)].filter((id) => UUID.test(id));
  for (const namer of ctx.actorNames()) {
    const unknown = uuids.filter((id) => !names.has(id));
    if (unknown.length === 0) break;
    const found = await namer(unknown).catch((err: unknown) => (ctx.log.warn({ err }, 'ops audit actor names could not be read'), new Map<string, string>()));
    for (const [id, name] of found) names.set(id, name);
  }
  return names;
}
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const tags = ['ops'];
const jobNotFound = { 404: errorCodes('JOB_NOT_FOUND') };

/** Writes one audit row for an action of the request's principal (who, role, what, filter, count, when). */
export async function audit(db: Db, clock: Clock, req: FastifyRequest, entry: Omit<NewAuditEntry, 'id' | 'at' | 'actor' | 'role'> & { id?: string }): Promise<string> {
  const id = entry.id ?? newId();
  const principal = req.principal!;
  await insertAudit(db, { ...entry, id, at: clock.now(), actor: principal.userId, role: principal.opsRole ?? 'none' });
  return id;
}

/**
 * /api/ops: what the console shows and does, each call scriptable with a token (viewer: GET;
 * operator: the rest). Every action is written to platform.ops_audit: by the handler (with its
 * counts), its refusals and failures by the HTTP kernel's admin audit hook.
 */
export function registerOpsRoutes(app: FastifyInstance, ctx: OpsRouteDeps): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const known = (name: string) => {
    if (!ctx.jobs.has(name)) throw new AppError('JOB_NOT_FOUND', `no job named ${name}`, 404);
  };

  r.get('/api/ops/jobs', {
    preHandler: app.requireOpsViewer,
    schema: { operationId: 'listJobs', tags, summary: 'Every job: schedule, lease holder and expiry, last runs with duration and counts, failures, paused or not', response: { 200: OpsJobList } },
  }, async () => ({ jobs: await jobsWithLeases(ctx.db, await ctx.jobs.list()) }));

  r.post('/api/ops/jobs/:name/run', {
    preHandler: app.requireOpsOperator,
    // Written below with the run's outcome; the kernel's hook writes its refusals and failures.
    config: { audit: 'own' },
    schema: {
      operationId: 'runJob',
      tags,
      summary: 'Run a job once now (respects its single-runner lock: a busy lock gives outcome "skipped"; a paused job is skipped with skipReason "paused")',
      params: JobName,
      response: { 200: OpsRunResult, ...jobNotFound },
    },
  }, async (req) => {
    known(req.params.name);
    const result = await ctx.jobs.runNow(req.params.name);
    await audit(ctx.db, ctx.clock, req, { action: 'run', target: `job:${req.params.name}`, filter: {}, dryRun: false, matched: null, changed: result.outcome === 'skipped' ? 0 : 1, status: 'done', finishedAt: ctx.clock.now(), httpStatus: 200, ...(result.error ? { error: result.error } : {}) });
    return result;
  });

  r.post('/api/ops/jobs/:name/pause', {
    // Before the body's validation: a viewer is told 403, not what the body lacks.
    preValidation: app.requireOpsOperator,
    config: { audit: 'own' },
    schema: {
      operationId: 'pauseJob',
      tags,
      summary:
        'Pause a job on every replica, saying why and until when: a run going stops between rows within about a second, no run starts until it is resumed; the reason and expected end show in the overview and in the annotations of the alerts watching the job',
      params: JobName,
      body: OpsPauseBody,
      response: { 200: OpsPauseState, 400: errorCodes('OPS_INVALID_PAUSE'), ...jobNotFound },
    },
  }, async (req) => {
    known(req.params.name);
    const now = ctx.clock.now();
    const until = req.body.until === undefined ? null : new Date(req.body.until);
    if (until && !(until > now)) throw new AppError('OPS_INVALID_PAUSE', 'until (the expected end) must be a time in the future', 400);
    const reason = req.body.reason.trim();
    await ctx.jobs.setPaused(req.params.name, { by: req.principal!.userId, reason, until });
    await audit(ctx.db, ctx.clock, req, { action: 'pause', target: `job:${req.params.name}`, filter: { reason, until: until?.toISOString() ?? null }, dryRun: false, matched: null, changed: 1, status: 'done', finishedAt: now, httpStatus: 200 });
    return { name: req.params.name, paused: true, reason, until };
  });

  r.post('/api/ops/jobs/:name/resume', {
    preHandler: app.requireOpsOperator,
    config: { audit: 'own' },
    schema: { operationId: 'resumeJob', tags, summary: 'Resume a paused job on every replica', params: JobName, response: { 200: OpsPauseState, ...jobNotFound } },
  }, async (req) => {
    known(req.params.name);
    await ctx.jobs.setPaused(req.params.name, null);
    await audit(ctx.db, ctx.clock, req, { action: 'resume', target: `job:${req.params.name}`, filter: {}, dryRun: false, matched: null, changed: 1, status: 'done', finishedAt: ctx.clock.now(), httpStatus: 200 });
    return { name: req.params.name, paused: false };
  });

  r.get('/api/ops/overview', {
    preHandler: app.requireOpsViewer,
    schema: {
      operationId: 'getOpsOverview',
      tags,
      summary: 'Jobs, backlogs, hub connections per replica, dependencies and the alerts that would fire now; built at most once per pollFloorMs',
      response: { 200: OpsOverview },
    },
  }, async () => ctx.overview());

  r.get('/api/ops/alerts', {
    preHandler: app.requireOpsViewer,
    schema: {
      operationId: 'getOpsAlerts',
      tags,
      summary: 'The deploy/prometheus alert rules evaluated on this replica\'s own metrics: firing and pending; an alert watching a paused job carries the pause in its annotations',
      response: { 200: OpsAlerts },
    },
  }, async () => annotatePauses(ctx.alerts(), await ctx.jobs.list(), ctx.clock.now()));

  r.get('/api/ops/audit', {
    preHandler: app.requireOpsViewer,
    schema: {
      operationId: 'listOpsAudit',
      tags,
      summary: 'Every ops action, newest first (who — by name where a module knows the user —, role, what, filter, counts, when), a page at a time (`next` is the following page\'s `after`)',
      querystring: AuditQuery,
      response: { 200: OpsAuditList, 400: errorCodes('OPS_INVALID_FILTER', 'OPS_INVALID_CURSOR') },
    },
  }, async (req) => {
    const before = req.query.before === undefined ? undefined : new Date(req.query.before);
    if (before && Number.isNaN(before.getTime())) throw new AppError('OPS_INVALID_FILTER', 'before must be an ISO-8601 date-time', 400);
    const after = req.query.after === undefined ? undefined : cursorOf(req.query.after, (id) => UUID.test(id));
    const limit = req.query.limit ?? OPS_DEFAULTS.opsAuditPageDefault;
    // One entry more than the page: whether another page follows.
    const rows = await listAudit(ctx.db, limit + 1, before, after);
    const page = rows.slice(0, limit);
    const names = await namesOf(ctx, page.map((e) => e.actor));
    return { items: page.map((e) => ({ ...e, actorName: names.get(e.actor.toLowerCase()) ?? null })), next: rows.length > limit ? cursorText(page[page.length - 1]!.at, page[page.length - 1]!.id) : null };
  });

  r.get('/api/ops/audit/:id', {
    preHandler: app.requireOpsViewer,
    schema: {
      operationId: 'getOpsAuditEntry',
      tags,
      summary: 'One ops action; a bulk action\'s progress (changed, status running → done / failed)',
      params: AuditParams,
      response: { 200: OpsAuditEntry, 404: errorCodes('OPS_AUDIT_NOT_FOUND') },
    },
  }, async (req) => {
    const entry = await readAudit(ctx.db, req.params.id);
    if (!entry) throw new AppError('OPS_AUDIT_NOT_FOUND', 'no ops action with this id', 404);
    return entry;
  });
}

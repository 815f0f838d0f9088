import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Db } from '../db/index.ts';
import { AppError, errorCodes } from '../http/index.ts';
import type { Logger } from '../observability/index.ts';
import type { Clock } from '../time.ts';
import { BulkActionBody, FailureKindParams, FailureQuery, FailureRowParams, OpsBulkStarted, OpsDryRun, OpsFailureDetail, OpsFailureKinds, OpsFailureList } from './api-schemas.ts';
import { runBulk, type BulkDeps } from './bulk.ts';
import { audit } from './routes.ts';
import { cursorOf, cursorText } from './keyset.ts';
import type { FailureFilter, FailureRow, FailureSource } from './types.ts';

/**
 * The failures pages' API: every kind of failed row a part registered (FailureSource), listed with
 * filters (time, error code, one of the kind's fields), and bulk actions on a filter — a dry run
 * (the default) counts and shows which rows would change; a real run is audited and goes in the
 * background at a bounded rate, its audit row being its progress.
 */

export interface FailureRouteDeps {
  db: Db;
  log: Logger;
  clock: Clock;
  /** This replica's name: a bulk run's audit row says who runs it. */
  holder: string;
  sources: () => readonly FailureSource[];
  bulk: Omit<BulkDeps, 'db' | 'log' | 'clock'>;
  /** OPS_TRACE_URL: a link with {traceId}. */
  traceUrl?: string;
  /** Aborted when the app closes: bulk runs stop between statements. */
  closing: AbortSignal;
}

type FilterInput = { from?: string; to?: string; errorCode?: string; field?: string; value?: string; ids?: string[] };

const INVALID = 'OPS_INVALID_FILTER';

/** The filter, or a 400 OPS_INVALID_FILTER: an empty range, a field the kind does not have, a field without a value. */
function filterOf(source: FailureSource, f: FilterInput = {}): FailureFilter {
  const from = f.from === undefined ? undefined : new Date(f.from);
  const to = f.to === undefined ? undefined : new Date(f.to);
  if ((from && Number.isNaN(from.getTime())) || (to && Number.isNaN(to.getTime()))) throw new AppError(INVALID, 'from and to must be ISO-8601 date-times', 400);
  if (from && to && from >= to) throw new AppError(INVALID, 'from must be before to (the range is [from, to))', 400);
  if ((f.field === undefined) !== (f.value === undefined)) throw new AppError(INVALID, 'field and value go together', 400);
  if (f.field !== undefined && !source.fields.includes(f.field)) {
    throw new AppError(INVALID, `${source.kind} rows have no field ${f.field} to filter on (fields: ${source.fields.join(', ')})`, 400);
  }
  return {
    ...(from ? { from } : {}),
    ...(to ? { to } : {}),
    ...(f.errorCode ? { errorCode: f.errorCode } : {}),
    ...(f.field ? { field: f.field, value: f.value! } : {}),
    ...(f.ids ? { ids: [...new Set(f.ids)] } : {}),
  };
}

const runbookOf = (alert: string) => `/ops/runbooks/${alert}`;

const tags = ['ops'];

export function registerFailureRoutes(app: FastifyInstance, ctx: FailureRouteDeps): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const sourceOf = (kind: string): FailureSource => {
    const source = ctx.sources().find((s) => s.kind === kind);
    if (!source) throw new AppError('OPS_FAILURE_KIND_NOT_FOUND', `no failed rows of kind ${kind} (GET /api/ops/failures lists them)`, 404);
    return source;
  };
  const describe = async (s: FailureSource, count?: number) => ({
    kind: s.kind,
    title: s.title,
    alert: s.alert,
    runbook: runbookOf(s.alert),
    fields: [...s.fields],
    actions: [...s.actions],
    worker: s.worker ?? null,
    // A kind whose rows cannot be read now (the dead letters while Kafka is down) is still listed.
    count: count ?? (await s.count({}).catch(() => null)),
  });
  const withTrace = (row: FailureRow) => ({ ...row, traceUrl: row.traceId && ctx.traceUrl ? ctx.traceUrl.replace('{traceId}', row.traceId) : null });

  r.get('/api/ops/failures', {
    preHandler: app.requireOpsViewer,
    schema: { operationId: 'listOpsFailureKinds', tags, summary: 'Every kind of failed row an operator can act on, with how many there are now', response: { 200: OpsFailureKinds } },
  }, async () => ({ kinds: await Promise.all(ctx.sources().map((s) => describe(s))) }));

  r.get('/api/ops/failures/:kind', {
    preHandler: app.requireOpsViewer,
    schema: {
      operationId: 'listOpsFailures',
      tags,
      summary:
        'Failed rows of one kind, a page at a time in a stable order (the time the kind lists, then id; `next` is the following page\'s `after`), filtered by time [from, to), error code and one of the kind\'s fields',
      params: FailureKindParams,
      querystring: FailureQuery,
      response: { 200: OpsFailureList, 400: errorCodes(INVALID, 'OPS_INVALID_CURSOR'), 404: errorCodes('OPS_FAILURE_KIND_NOT_FOUND') },
    },
  }, async (req) => {
    const source = sourceOf(req.params.kind);
    const { limit = 100, after, ...input } = req.query;
    const filter = filterOf(source, input);
    const cursor = after === undefined ? undefined : cursorOf(after);
    // One row more than the page: whether a next page exists, without a second count.
    const [total, rows] = await Promise.all([source.count(filter), source.list(filter, limit + 1, cursor)]);
    const page = rows.slice(0, limit);
    return { kind: await describe(source, total), total, items: page.map(withTrace), next: rows.length > limit ? cursorText(page[page.length - 1]!.at, page[page.length - 1]!.id) : null };
  });

  r.get('/api/ops/failures/:kind/rows/:id', {
    preHandler: app.requireOpsViewer,
    schema: {
      operationId: 'getOpsFailure',
      tags,
      summary: 'One failed row (its detail: fields, attempts, last error, trace and runbook); 404 once it is no longer failed (retried, requeued, discarded)',
      params: FailureRowParams,
      response: { 200: OpsFailureDetail, 400: errorCodes(INVALID), 404: errorCodes('OPS_FAILURE_KIND_NOT_FOUND', 'OPS_FAILURE_ROW_NOT_FOUND') },
    },
  }, async (req) => {
    const source = sourceOf(req.params.kind);
    const [row] = await source.list(filterOf(source, { ids: [req.params.id] }), 1);
    if (!row) throw new AppError('OPS_FAILURE_ROW_NOT_FOUND', `no failed ${source.kind} row ${req.params.id} (it may have been retried, requeued or discarded)`, 404);
    return { kind: await describe(source), row: withTrace(row) };
  });

  r.post('/api/ops/failures/:kind/actions', {
    preValidation: app.requireOpsOperator,
    // Written below (its counts, a real run's progress); the kernel's hook writes its refusals and failures.
    config: { audit: 'own' },
    schema: {
      operationId: 'actOnOpsFailures',
      tags,
      summary:
        'Retry / requeue / discard / replay the failed rows a filter matches. dryRun (the default) counts them and shows the first that would change; otherwise the action runs in the background at a bounded rate (GET /api/ops/audit/{auditId} is its progress). Audited either way',
      params: FailureKindParams,
      body: BulkActionBody,
      response: {
        200: OpsDryRun,
        202: OpsBulkStarted,
        400: errorCodes(INVALID, 'OPS_ACTION_NOT_SUPPORTED'),
        404: errorCodes('OPS_FAILURE_KIND_NOT_FOUND'),
      },
    },
  }, async (req, reply) => {
    const source = sourceOf(req.params.kind);
    const { action, dryRun = true, max = 1000 } = req.body;
    if (!source.actions.includes(action)) {
      const can = source.actions.length === 0 ? 'are read-only' : `take ${source.actions.join(', ')}`;
      throw new AppError('OPS_ACTION_NOT_SUPPORTED', `${source.kind} rows ${can}, not ${action}`, 400);
    }
    const filter = filterOf(source, req.body.filter);
    const matched = await source.count(filter);
    const entry = { action, target: `failures:${source.kind}`, filter: { ...req.body.filter, max }, matched };
    if (dryRun) {
      const sample = (await source.list(filter, Math.min(20, max))).map(withTrace);
      const auditId = await audit(ctx.db, ctx.clock, req, { ...entry, dryRun: true, changed: 0, status: 'done', finishedAt: ctx.clock.now(), httpStatus: 200 });
      return { dryRun: true as const, matched, wouldChange: Math.min(matched, max), sample, auditId };
    }
    const auditId = await audit(ctx.db, ctx.clock, req, { ...entry, dryRun: false, changed: 0, status: 'running', httpStatus: 202, holder: ctx.holder });
    void runBulk({ db: ctx.db, log: ctx.log, clock: ctx.clock, ...ctx.bulk }, { auditId, source, action, filter, max, actor: req.principal!.userId }, ctx.closing);
    return reply.status(202).send({ dryRun: false as const, matched, auditId, ratePerSecond: (ctx.bulk.chunk * 1000) / ctx.bulk.pauseMs });
  });
}

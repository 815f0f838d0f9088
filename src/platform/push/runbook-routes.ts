import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { TObject } from '@sinclair/typebox';
import type { Db } from '../db/index.ts';
import { AppError, errorCodes } from '../http/index.ts';
import type { Logger } from '../observability/index.ts';
import type { Clock } from '../time.ts';
import { BoundedInt, Nullable, Text, Timestamp, Uuid } from '../types/index.ts';
import { listQuarantined, requeueMatching, requeueQuarantined, type QuarantineFilter, type QuarantinedRow } from './quarantine-sql.ts';
import { PUSH_DEFAULTS } from './defaults.ts';

/** Runbook endpoints (admin) for `messenger_realtime_quarantined_total > 0`: read LastError, fix the cause, re-enqueue. */

const QuarantinedView = Type.Object({
  id: Uuid,
  kind: Type.String(),
  targetKind: Type.String(),
  chatId: Nullable(Uuid),
  targetUserId: Nullable(Uuid),
  messageId: Nullable(Uuid),
  refId: Nullable(Uuid),
  sessionKind: Nullable(Type.String()),
  seq: Type.Union([Type.Integer(), Type.Null()]),
  attempts: Type.Integer(),
  lastError: Nullable(Type.String()),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
const QuarantinedList = Type.Object({ items: Type.Array(QuarantinedView), nextAfter: Nullable(Uuid) });
const ListQuery = Type.Object(
  { after: Type.Optional(Uuid), limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: PUSH_DEFAULTS.quarantinePageDefault })) },
  { additionalProperties: false },
);
const Requeued = Type.Object({ requeued: Type.Integer() });

const requeueFilterOf = (kinds: readonly string[]) => Type.Object(
  {
    kind: Type.Optional(Type.Union(kinds.map((k) => Type.Literal(k)))),
    lastErrorPrefix: Type.Optional(Text({ minLength: 1, maxLength: 512, description: 'LastError starts with this text (no wildcards)' })),
    createdFrom: Type.Optional(Timestamp),
    createdTo: Type.Optional(Timestamp),
    limit: Type.Optional(BoundedInt({ minimum: 1, maximum: PUSH_DEFAULTS.requeueMaxLimit, default: PUSH_DEFAULTS.requeueLimitDefault })),
    dryRun: Type.Optional(Type.Boolean({ default: false })),
  },
  { additionalProperties: false },
);
const RequeueReply = Type.Object({
  dryRun: Type.Boolean(),
  matched: Type.Integer({ description: 'Quarantined rows matching the filters before the call (not capped by limit)' }),
  requeued: Type.Integer({ description: 'rows moved back to Pending by this call, oldest first (0 on a dry run)' }),
});

/** The filter of a bulk requeue, or a 400 for dates that are no dates or a range that is empty. */
function filterOf(body: { kind?: string; lastErrorPrefix?: string; createdFrom?: string; createdTo?: string }): QuarantineFilter {
  const date = (field: string, text: string | undefined): Date | undefined => {
    if (text === undefined) return undefined;
    const d = new Date(text);
    if (Number.isNaN(d.getTime())) throw new AppError('MSG_REALTIME_REQUEUE_INVALID_FILTER', `${field} is not a valid date-time`, 400);
    return d;
  };
  const createdFrom = date('createdFrom', body.createdFrom);
  const createdTo = date('createdTo', body.createdTo);
  if (createdFrom && createdTo && createdFrom >= createdTo) {
    throw new AppError('MSG_REALTIME_REQUEUE_INVALID_FILTER', 'createdFrom must be before createdTo (the range is [createdFrom, createdTo))', 400);
  }
  return {
    ...(body.kind !== undefined ? { kind: body.kind } : {}),
    ...(body.lastErrorPrefix !== undefined ? { lastErrorPrefix: body.lastErrorPrefix } : {}),
    ...(createdFrom ? { createdFrom } : {}),
    ...(createdTo ? { createdTo } : {}),
  };
}

const view = (r: QuarantinedRow) => ({ ...r, createdAt: r.createdAt.toISOString(), updatedAt: r.updatedAt.toISOString() });
const tags = ['messenger-admin'];
/** Each route lists its own refusals; the kernel's codes and those of the mounting module's guards are added. */

export interface RunbookRouteDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  /** The registered kinds (PushKinds.names), in the order the filter's schema lists them. */
  kinds: readonly string[];
  /** preValidation refusing a body field the schema does not name with `code` (the mounting module's admin-body rule). */
  refuseUnknownFields: (schema: TObject, code: string) => (req: FastifyRequest) => Promise<void>;
}

/**
 * The push part's runbook calls over the realtime outbox (admin): list Quarantined rows, requeue
 * one, requeue a filtered batch. Mounted by the module whose operators use them (the messenger, at
 * /api/messenger/admin/realtime-outbox), inside its scope.
 */
export function registerRealtimeOutboxRoutes(app: FastifyInstance, ctx: RunbookRouteDeps): void {
  const RequeueFilter = requeueFilterOf(ctx.kinds);
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const base = '/api/messenger/admin/realtime-outbox';

  r.get(
    `${base}/quarantined`,
    {
      preHandler: app.requireAdmin,
      schema: { operationId: 'listQuarantinedRealtimeRows', tags, summary: 'Quarantined realtime_outbox rows (id order, keyset paging) with their LastError', querystring: ListQuery, response: { 200: QuarantinedList } },
    },
    async (req) => {
      const limit = req.query.limit ?? PUSH_DEFAULTS.quarantinePageDefault;
      const rows = await listQuarantined(ctx.db, req.query.after ?? null, limit);
      return { items: rows.map(view), nextAfter: rows.length === limit ? rows[rows.length - 1]!.id : null };
    },
  );

  r.post(
    `${base}/:id/requeue`,
    {
      preHandler: app.requireAdmin,
      schema: {
        operationId: 'requeueRealtimeRow',
        tags,
        summary: 'Re-enqueue one Quarantined row: Pending, Attempts = 0, due now',
        params: Type.Object({ id: Uuid }),
        response: { 200: Requeued, 404: errorCodes('MSG_REALTIME_ROW_NOT_QUARANTINED') },
      },
    },
    async (req) => {
      const requeued = await requeueQuarantined(ctx.db, [req.params.id], ctx.clock.now());
      if (requeued === 0) throw new AppError('MSG_REALTIME_ROW_NOT_QUARANTINED', 'no Quarantined realtime_outbox row with this id', 404);
      ctx.log.info({ entryId: req.params.id }, 'realtime outbox row requeued');
      return { requeued };
    },
  );

  r.post(
    `${base}/requeue-quarantined`,
    {
      // Before validation: an admin is asked first; a mistyped filter is refused, not dropped.
      preValidation: [app.requireAdmin, ctx.refuseUnknownFields(RequeueFilter, 'MSG_REALTIME_REQUEUE_INVALID_FILTER')],
      schema: {
        operationId: 'requeueQuarantinedRealtimeRows',
        tags,
        summary:
          'Re-enqueue Quarantined rows matching the filters (after the cause is fixed): at most `limit` a call (default 100, up to 1000), oldest first; `dryRun: true` only counts',
        body: RequeueFilter,
        response: { 200: RequeueReply, 400: errorCodes('MSG_REALTIME_REQUEUE_INVALID_FILTER') },
      },
    },
    async (req) => {
      const body = req.body;
      const filter = filterOf(body);
      const dryRun = body.dryRun ?? false;
      const limit = body.limit ?? PUSH_DEFAULTS.requeueLimitDefault;
      const result = await requeueMatching(ctx.db, filter, limit, ctx.clock.now(), dryRun);
      ctx.log.info({ ...body, limit, dryRun, ...result }, dryRun ? 'realtime outbox requeue dry run' : 'realtime outbox quarantined rows requeued');
      return { dryRun, ...result };
    },
  );
}

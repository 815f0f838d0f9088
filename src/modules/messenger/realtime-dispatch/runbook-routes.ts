import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { AppError, ErrorBody } from '../../../platform/http/index.ts';
import { Nullable, Uuid } from '../../../platform/types/index.ts';
import type { MessengerContext } from '../context.ts';
import { listQuarantined, requeueQuarantined, type QuarantinedRow } from './outbox-sql.ts';

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
  { after: Type.Optional(Uuid), limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 100 })) },
  { additionalProperties: false },
);
const Requeued = Type.Object({ requeued: Type.Integer() });

const view = (r: QuarantinedRow) => ({ ...r, createdAt: r.createdAt.toISOString(), updatedAt: r.updatedAt.toISOString() });
const tags = ['messenger-admin'];
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody };

export function registerRealtimeOutboxRoutes(app: FastifyInstance, ctx: MessengerContext): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const base = '/api/messenger/admin/realtime-outbox';

  r.get(
    `${base}/quarantined`,
    {
      preHandler: app.requireAdmin,
      schema: { operationId: 'listQuarantinedRealtimeRows', tags, summary: 'Quarantined realtime_outbox rows (id order, keyset paging) with their LastError', querystring: ListQuery, response: { 200: QuarantinedList, ...errors } },
    },
    async (req) => {
      const limit = req.query.limit ?? 100;
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
        response: { 200: Requeued, 404: ErrorBody, ...errors },
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
      preHandler: app.requireAdmin,
      schema: { operationId: 'requeueQuarantinedRealtimeRows', tags, summary: 'Re-enqueue every Quarantined row (after the cause is fixed)', response: { 200: Requeued, ...errors } },
    },
    async () => {
      const requeued = await requeueQuarantined(ctx.db, null, ctx.clock.now());
      ctx.log.info({ requeued }, 'realtime outbox quarantined rows requeued');
      return { requeued };
    },
  );
}

import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type, type Static } from '@sinclair/typebox';
import { AppError, errorCodes } from '../../../platform/http/index.ts';
import { Text, Timestamp, Uuid } from '../../../platform/types/index.ts';
import { ChannelName, IdParams } from '../api-schemas.ts';
import type { NotificationsContext } from '../context.ts';
import { API_ERRORS, type Channel } from '../model.ts';
import { reopen } from './reopen.ts';
import { notificationExists, type Reprocessed, type TerminalFilter } from './sql.ts';

/**
 * Runbook NotificationsTerminalFailures: after the cause is fixed, terminal Failed notifications go
 * back to the retry worker in a new DeliveryCycle — one by id, or those of a channel / error code /
 * time range, at most `limit` per call. Admin only; each call that changes rows is one audit line
 * (who, filter, count). A refused call (bad filter, no admin) changes nothing: the filter is checked
 * before the one statement runs.
 */

const MAX_PER_CALL = 1000;

const ReprocessBody = Type.Object(
  {
    channel: Type.Optional(ChannelName),
    errorCode: Type.Optional(Text({ maxLength: 64, pattern: '^[A-Z][A-Z0-9_]*$', description: 'LastError, e.g. NTF_PROVIDER_TRANSIENT' })),
    failedFrom: Type.Optional(Timestamp),
    failedBefore: Type.Optional(Timestamp),
    limit: Type.Integer({ minimum: 1, maximum: MAX_PER_CALL, default: 100 }),
  },
  { additionalProperties: false },
);
type ReprocessBody = Static<typeof ReprocessBody>;

const ReprocessReply = Type.Object({
  reprocessed: Type.Integer(),
  notifications: Type.Array(Type.Object({ id: Uuid, channel: ChannelName, deliveryCycle: Type.Integer(), lastError: Type.Union([Type.String(), Type.Null()]) })),
});

const tags = ['notifications'];
/** Each route's own refusals; the kernel adds the input, token, admin and availability codes (openapi-components.ts). */
const reply = (rows: Reprocessed[]) => ({
  reprocessed: rows.length,
  notifications: rows.map((r) => ({ id: r.id, channel: r.channel, deliveryCycle: r.deliveryCycle, lastError: r.lastError })),
});

/** The bulk call's filter, or the 400 that refuses it: at least one narrowing field, a range that is not empty. */
export function filterOf(body: ReprocessBody): TerminalFilter {
  const { channel, errorCode, failedFrom, failedBefore } = body;
  if (channel === undefined && errorCode === undefined && failedFrom === undefined && failedBefore === undefined) {
    throw new AppError(API_ERRORS.reprocessFilterRequired, 'name a channel, an errorCode or a failedFrom/failedBefore range (use the by-id call for one row)', 400);
  }
  const from = failedFrom === undefined ? undefined : new Date(failedFrom);
  const before = failedBefore === undefined ? undefined : new Date(failedBefore);
  if ((from && Number.isNaN(from.getTime())) || (before && Number.isNaN(before.getTime()))) {
    throw new AppError(API_ERRORS.reprocessRangeInvalid, 'failedFrom and failedBefore must be valid timestamps', 400);
  }
  if (from && before && from.getTime() >= before.getTime()) {
    throw new AppError(API_ERRORS.reprocessRangeInvalid, 'failedFrom must be before failedBefore', 400);
  }
  return {
    ...(channel === undefined ? {} : { channel: channel as Channel }),
    ...(errorCode === undefined ? {} : { errorCode }),
    ...(from ? { failedFrom: from } : {}),
    ...(before ? { failedBefore: before } : {}),
  };
}

/**
 * The body validator strips unknown properties (Fastify's default); for a bulk mutation a misspelt
 * filter (`errrorCode`) would silently widen it, so unknown fields are refused before that.
 */
async function refuseUnknownFields(req: FastifyRequest): Promise<void> {
  const body = req.body;
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return;
  const unknown = Object.keys(body).filter((k) => !Object.hasOwn(ReprocessBody.properties, k));
  if (unknown.length > 0) {
    throw new AppError(API_ERRORS.reprocessFilterUnknown, `unknown filter field(s): ${unknown.slice(0, 5).map((k) => k.slice(0, 40)).join(', ')}`, 400);
  }
}

export function registerTerminalFailureRoutes(app: FastifyInstance, ctx: NotificationsContext): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const admin = { preHandler: app.requireAdmin };
  const base = '/api/notifications/terminal-failures';

  r.post(
    `${base}/:id/reprocess`,
    {
      ...admin,
      schema: {
        operationId: 'reprocessTerminalFailure',
        tags,
        summary: 'Runbook terminal-failures: one terminal Failed notification back to the retry worker in a new DeliveryCycle (Attempts 0, due now)',
        params: IdParams,
        response: { 200: ReprocessReply, 404: errorCodes(API_ERRORS.notFound), 409: errorCodes(API_ERRORS.notTerminal) },
      },
    },
    async (req) => {
      const rows = await reopen(ctx, { id: req.params.id }, 1);
      if (rows.length === 0) {
        if (!(await notificationExists(ctx.db, req.params.id))) throw new AppError(API_ERRORS.notFound, 'no such notification', 404);
        throw new AppError(API_ERRORS.notTerminal, 'the notification is not terminal Failed (or a concurrent change holds it); nothing to reprocess', 409);
      }
      const [row] = rows;
      ctx.log.info(
        { actor: req.principal!.userId, notificationId: row!.id, channel: row!.channel, deliveryCycle: row!.deliveryCycle, lastError: row!.lastError },
        'terminal notification reprocessed',
      );
      return reply(rows);
    },
  );

  r.post(
    `${base}/reprocess`,
    {
      ...admin,
      preValidation: refuseUnknownFields,
      schema: {
        operationId: 'reprocessTerminalFailures',
        tags,
        summary: `Runbook terminal-failures: terminal Failed notifications of a channel / error code / failure time range (failedFrom ≤ t < failedBefore), oldest first, at most limit (≤ ${MAX_PER_CALL}) per call, each in a new DeliveryCycle; call again while reprocessed = limit`,
        body: ReprocessBody,
        response: { 200: ReprocessReply, 400: errorCodes(API_ERRORS.reprocessFilterRequired, API_ERRORS.reprocessRangeInvalid, API_ERRORS.reprocessFilterUnknown) },
      },
    },
    async (req) => {
      const filter = filterOf(req.body);
      const rows = await reopen(ctx, filter, req.body.limit);
      const { channel, errorCode, failedFrom, failedBefore } = req.body;
      ctx.log.info(
        { actor: req.principal!.userId, filter: { channel, errorCode, failedFrom, failedBefore }, limit: req.body.limit, reprocessed: rows.length },
        'terminal notifications reprocessed',
      );
      return reply(rows);
    },
  );
}

import type { FastifyInstance } from 'fastify';
import type { UserFrames } from '../../../platform/module.ts';
import type { Db } from '../../../platform/db/index.ts';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { AppError, errorCodes } from '../../../platform/http/index.ts';
import { enqueue } from '../../../platform/outbox/index.ts';
import { Nullable, Timestamp, Uuid } from '../../../platform/types/index.ts';
import { ChannelName, IdParams } from '../api-schemas.ts';
import type { NotificationsContext } from '../context.ts';
import { dispatchedEvent } from '../events.ts';
import { API_ERRORS } from '../model.ts';
import { recordStatusChanges } from '../status-frames.ts';
import { notificationExists } from '../terminal-failures/sql.ts';
import { confirmUnconfirmedAsSent, listUnconfirmed, resendUnconfirmed, type ResolvedRow } from './sql.ts';

/**
 * Runbook NotificationsEmailUnconfirmed: emails whose send may have reached the server unrecorded
 * are never resent by the workers (delivery/intent.ts). An operator lists them, checks the mail
 * server's log for their Message-ID, and resolves each with one call: `sent` records it Sent (with
 * its NotificationDispatchedEvent), `resend` makes it due at once for the retry worker (a possible
 * duplicate the operator chose). Admin only; each resolution is one audit line.
 */

const ResolveBody = Type.Object(
  { outcome: Type.Union([Type.Literal('sent'), Type.Literal('resend')], { description: 'sent: the mail server delivered it; resend: it did not' }) },
  { additionalProperties: false },
);
const ListQuery = Type.Object({ limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }) }, { additionalProperties: false });
const UnconfirmedView = Type.Object({
  id: Uuid,
  channel: ChannelName,
  status: Type.String(),
  deliveryCycle: Type.Integer(),
  attempts: Type.Integer(),
  messageId: Nullable(Type.String()),
  since: Nullable(Timestamp),
});
const ResolveReply = Type.Object({ id: Uuid, status: Type.String(), deliveryCycle: Type.Integer(), version: Type.Integer() });

const tags = ['notifications'];
/** Each route's own refusals; the kernel adds the input, token, admin and availability codes (openapi-components.ts). */

export function registerUnconfirmedRoutes(app: FastifyInstance, ctx: NotificationsContext): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const admin = { preHandler: app.requireAdmin };

  r.get(
    '/api/notifications/unconfirmed',
    {
      ...admin,
      schema: {
        operationId: 'listUnconfirmedNotifications',
        tags,
        summary: 'Runbook NotificationsEmailUnconfirmed: sends whose outcome is unknown (never resent), oldest first, with the Message-ID to look up',
        querystring: ListQuery,
        response: { 200: Type.Object({ items: Type.Array(UnconfirmedView) }) },
      },
    },
    async (req) => ({
      items: (await listUnconfirmed(ctx.db, ctx.clock.now(), req.query.limit)).map((u) => ({ ...u, since: u.since?.toISOString() ?? null })),
    }),
  );

  r.post(
    '/api/notifications/unconfirmed/:id/resolve',
    {
      ...admin,
      schema: {
        operationId: 'resolveUnconfirmedNotification',
        tags,
        summary: `Runbook NotificationsEmailUnconfirmed: settle one unconfirmed send — sent (recorded Sent) or resend (due now for the retry worker); 409 ${API_ERRORS.notUnconfirmed} when its outcome is known`,
        params: IdParams,
        body: ResolveBody,
        response: { 200: ResolveReply, 404: errorCodes(API_ERRORS.notFound), 409: errorCodes(API_ERRORS.notUnconfirmed) },
      },
    },
    async (req) => {
      const now = ctx.clock.now();
      const { outcome } = req.body;
      const row = await ctx.db.transaction(async (tx) => {
        const resolved = outcome === 'sent' ? await confirmUnconfirmedAsSent(tx, req.params.id, now) : await resendUnconfirmed(tx, req.params.id, now);
        if (resolved) await recordEvents(ctx.userFrames, tx, resolved, outcome, now);
        return resolved;
      });
      if (!row) {
        if (!(await notificationExists(ctx.db, req.params.id))) throw new AppError(API_ERRORS.notFound, 'no such notification', 404);
        throw new AppError(API_ERRORS.notUnconfirmed, 'the notification has no unconfirmed send (its outcome is known, or a send is in flight); nothing changed', 409);
      }
      if (outcome === 'sent') ctx.metrics.dispatchedEvents.inc({ status: 'Sent' });
      ctx.log.info({ actor: req.principal!.userId, notificationId: row.id, channel: row.channel, deliveryCycle: row.deliveryCycle, outcome }, 'unconfirmed notification resolved');
      return { id: row.id, status: row.status, deliveryCycle: row.deliveryCycle, version: row.version };
    },
  );
}

/** The resolution's events, in its transaction: the cycle's outcome event for `sent`, the status frame for both. */
async function recordEvents(frames: UserFrames, tx: Db, row: ResolvedRow, outcome: 'sent' | 'resend', now: Date): Promise<void> {
  if (outcome === 'sent') {
    await enqueue(
      tx,
      dispatchedEvent({ notificationId: row.id, channel: row.channel, deliveryCycle: row.deliveryCycle, status: 'Sent', providerMessageId: row.providerMessageId, correlationId: row.correlationId }, now),
    );
  }
  await recordStatusChanges(
    frames,
    tx,
    [{ notificationId: row.id, recipientUserId: row.recipientUserId, channel: row.channel, status: row.status, terminal: false, deliveryCycle: row.deliveryCycle, errorCode: row.status === 'Failed' ? row.lastError : null, readAt: row.readAt, version: row.version }],
    now,
  );
}

import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { AppError, errorCodes, perUserLimit } from '../../platform/http/index.ts';
import { jsonValueProblem } from '../../platform/types/index.ts';
import {
  ChannelConfigBody,
  ChannelConfigReply,
  ChannelParams,
  CreatedReply,
  CreateNotificationBody,
  NOTIFICATION_DATA_MAX_BYTES,
  FeedQuery,
  FeedReply,
  IdParams,
  MarkReadBody,
  NotificationView,
  notificationView,
  PushTokenBody,
  PushTokenDeleteBody,
} from './api-schemas.ts';
import { channelConfigView, loadChannelConfigs, putChannelConfig } from './channels.ts';
import type { NotificationsContext } from './context.ts';
import { API_ERRORS, type Channel } from './model.ts';
import { createNotifications, getOwnNotification, markRead } from './notifications.ts';
import { readFeed, registerPushToken, unregisterPushToken } from './sql.ts';
import type { ChannelConfigRow } from './schema.ts';

const tags = ['notifications'];

/** Each route's own refusals; the kernel adds the input, token, admin, rate-limit and availability codes (openapi-components.ts). */
const notFound = errorCodes(API_ERRORS.notFound);

/** Notifications REST: create (admin/system), feed and mark-read (user), channel config (admin), push tokens (user). */
export function registerNotificationRoutes(app: FastifyInstance, ctx: NotificationsContext): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const admin = { preHandler: app.requireAdmin };
  const user = { preHandler: app.requireUser };
  const configReply = (c: ChannelConfigRow) => ({ ...channelConfigView(c), providerState: ctx.providers.state(c.providerKey) });

  r.post(
    '/api/notifications',
    {
      ...admin,
      schema: {
        operationId: 'createNotification',
        tags,
        summary: 'Notify a user: the in-app copy is always stored and pushed; one row per external channel (Push: per device token)',
        body: CreateNotificationBody,
        response: { 201: CreatedReply, 400: errorCodes(API_ERRORS.missingAddress) },
      },
    },
    async (req, reply) => {
      const problem = req.body.data === undefined ? undefined : jsonValueProblem(req.body.data, NOTIFICATION_DATA_MAX_BYTES);
      if (problem) throw new AppError('VALIDATION_FAILED', `data ${problem.message}`, 400);
      const created = await ctx.db.transaction((tx) =>
        createNotifications(tx, { ...req.body, correlationId: req.id }, ctx.clock.now(), ctx.providers),
      );
      for (const h of created.heldBack) ctx.metrics.skipped.inc(h);
      return reply.status(201).send({ notifications: created.rows.map((n) => notificationView(n, ctx.clock.now())), heldBack: created.heldBack });
    },
  );

  r.get(
    '/api/notifications',
    { ...user, schema: { operationId: 'listNotifications', tags, summary: "The caller's in-app feed, newest first", querystring: FeedQuery, response: { 200: FeedReply } } },
    async (req) => {
      const rows = await readFeed(ctx.db, req.principal!.userId, req.query);
      const now = ctx.clock.now();
      return { items: rows.map((n) => notificationView(n, now)), nextBefore: rows.length === req.query.limit ? rows.at(-1)!.id : null };
    },
  );

  r.get(
    '/api/notifications/:id',
    { ...user, schema: { operationId: 'getNotification', tags, summary: 'One of the caller’s notifications (re-read after a 409)', params: IdParams, response: { 200: NotificationView, 404: notFound } } },
    async (req) => notificationView(await getOwnNotification(ctx.db, req.principal!.userId, req.params.id), ctx.clock.now()),
  );

  r.post(
    '/api/notifications/:id/read',
    {
      ...user,
      schema: {
        operationId: 'markNotificationRead',
        tags,
        summary: 'Mark read with the version last seen (or the Version of its notification_created / notification_status_changed frame); 409 NTF_VERSION_CONFLICT when it changed meanwhile (re-read and retry); pushes notification_status_changed',
        params: IdParams,
        body: MarkReadBody,
        response: { 200: NotificationView, 404: notFound, 409: errorCodes(API_ERRORS.versionConflict) },
      },
    },
    async (req) => {
      try {
        const now = ctx.clock.now();
        const { row } = await markRead(ctx.db, ctx.userFrames, req.principal!.userId, req.params.id, req.body.version, now);
        return notificationView(row, now);
      } catch (err) {
        if (err instanceof AppError && err.code === API_ERRORS.versionConflict) ctx.metrics.versionConflicts.inc({ writer: 'mark_read', resolution: 'rejected' });
        throw err;
      }
    },
  );

  r.get(
    '/api/notifications/channels',
    { ...admin, schema: { operationId: 'listNotificationChannels', tags, summary: 'Every channel config', response: { 200: Type.Object({ channels: Type.Array(ChannelConfigReply) }) } } },
    async () => ({ channels: [...(await loadChannelConfigs(ctx.db)).values()].map(configReply) }),
  );

  r.put(
    '/api/notifications/channels/:channel',
    {
      ...admin,
      schema: {
        operationId: 'setNotificationChannel',
        tags,
        summary: 'Set a channel config (IsEnabled, ProviderKey, MaxAttempts, RetryBackoff Fixed/Exponential)',
        params: ChannelParams,
        body: ChannelConfigBody,
        response: { 200: ChannelConfigReply, 400: errorCodes(API_ERRORS.invalidProvider, API_ERRORS.invalidBackoff) },
      },
    },
    async (req) => configReply(await putChannelConfig(ctx.db, req.params.channel as Channel, req.body, ctx.clock.now())),
  );

  r.post(
    '/api/notifications/push-tokens',
    {
      ...user,
      config: perUserLimit(ctx.tuning.rateLimitPushTokenRegistrationsPerMinute),
      schema: {
        operationId: 'registerPushToken',
        tags,
        summary: `Register a device push token for the caller (409 ${API_ERRORS.pushTokenTaken} when another user holds it, ${API_ERRORS.pushTokenLimit} past the per-user cap)`,
        body: PushTokenBody,
        response: { 204: Type.Null(), 409: errorCodes(API_ERRORS.pushTokenTaken, API_ERRORS.pushTokenLimit) },
      },
    },
    async (req, reply) => {
      const max = ctx.tuning.pushTokensMaxPerUser;
      const outcome = await registerPushToken(ctx.db, req.principal!.userId, req.body.token, req.body.platform, ctx.clock.now(), max);
      if (outcome === 'taken') {
        throw new AppError(API_ERRORS.pushTokenTaken, 'this push token is registered to another user; it must be removed there first', 409);
      }
      if (outcome === 'limit') throw new AppError(API_ERRORS.pushTokenLimit, `at most ${max} push tokens per user; remove one first`, 409);
      return reply.status(204).send(null);
    },
  );

  r.delete(
    '/api/notifications/push-tokens',
    { ...user, schema: { operationId: 'unregisterPushToken', tags, summary: 'Remove one of the caller’s push tokens', body: PushTokenDeleteBody, response: { 204: Type.Null(), 404: notFound } } },
    async (req, reply) => {
      if (!(await unregisterPushToken(ctx.db, req.principal!.userId, req.body.token))) {
        throw new AppError(API_ERRORS.notFound, 'no such push token', 404);
      }
      return reply.status(204).send(null);
    },
  );
}

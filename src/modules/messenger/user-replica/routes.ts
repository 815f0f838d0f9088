import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { Db } from '../../../platform/db/index.ts';
import { EventBusUnavailableError } from '../../../platform/events/index.ts';
import { AppError, errorCodes } from '../../../platform/http/index.ts';
import { Nullable, Timestamp, Uuid } from '../../../platform/types/index.ts';
import { refuseUnknownFields } from '../admin-body.ts';
import { listPhoneConflicts } from './phone-conflicts.ts';
import { ResyncUnavailable, resyncUserReplica, type ResyncDeps } from './resync.ts';
import { MESSENGER_DEFAULTS } from '../defaults.ts';

/** The user replica's admin REST surface: phone conflicts for support review (camelCase bodies). */

export const ConflictsQuery = Type.Object(
  {
    status: Type.Optional(Type.Union([Type.Literal('Open'), Type.Literal('Resolved')], { default: 'Open' })),
    after: Type.Optional(Uuid),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: MESSENGER_DEFAULTS.phoneConflictPageDefault })),
  },
  { additionalProperties: false },
);

export const PhoneConflictReply = Type.Object({
  id: Uuid,
  userId: Uuid,
  phoneNumber: Type.String({ description: 'The phone the user asked for (E.164), held by holderUserId' }),
  holderUserId: Nullable(Uuid),
  identityUserVersion: Type.Integer(),
  messageId: Type.String(),
  occurrences: Type.Integer(),
  status: Type.Union([Type.Literal('Open'), Type.Literal('Resolved')]),
  resolution: Nullable(Type.Union([Type.Literal('Superseded'), Type.Literal('PhoneReleased')])),
  detectedAt: Timestamp,
  lastSeenAt: Timestamp,
  resolvedAt: Nullable(Timestamp),
});

export const ConflictsReply = Type.Object({ items: Type.Array(PhoneConflictReply), nextAfter: Nullable(Uuid) });

/** Users one resync call may name; more go in several calls, or none for all. */
export const RESYNC_MAX_USERS = 1000;

const ResyncBody = Type.Object(
  {
    userIds: Type.Optional(
      Type.Array(Uuid, { minItems: 1, maxItems: RESYNC_MAX_USERS, uniqueItems: true, description: 'only these users; omit for every user on the topic' }),
    ),
  },
  { additionalProperties: false },
);

const ResyncReply = Type.Object({
  resyncId: Uuid,
  messagesRead: Type.Integer({ description: 'records read off pin.identity.users.v1' }),
  usersOnTopic: Type.Integer({ description: 'users (of those asked for) with a UserUpserted record on the topic' }),
  usersApplied: Type.Integer({ description: 'replica rows written from their newest record, past the version guard' }),
  laterRecordsApplied: Type.Integer({ description: 'newer records that arrived during the resync, applied with the version guard' }),
  invalidRecords: Type.Integer({ description: 'records left out: unreadable, or what the consumer dead-letters' }),
  notOnTopic: Type.Array(Uuid, { description: 'users asked for with no record on the topic (left as they are)' }),
  durationMs: Type.Integer(),
});

const tags = ['messenger'];

export function registerUserReplicaRoutes(app: FastifyInstance, db: Db, resync: ResyncDeps): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.get(
    '/api/messenger/admin/user-phone-conflicts',
    {
      preHandler: app.requireAdmin,
      schema: {
        operationId: 'listUserPhoneConflicts',
        tags,
        summary: 'Phone conflicts of the user replica for support review (MSG_USER_PHONE_CONFLICT, INV-MU-2), Open by default',
        querystring: ConflictsQuery,
        // The kernel's and the messenger guard's codes only (messenger/routes.ts).
        response: { 200: ConflictsReply },
      },
    },
    async (req) =>
      listPhoneConflicts(db, { status: req.query.status ?? 'Open', after: req.query.after, limit: req.query.limit ?? MESSENGER_DEFAULTS.phoneConflictPageDefault }),
  );

  // One at a time on a replica: a second call while one runs is refused, not queued behind it.
  let running = false;
  r.post(
    '/api/messenger/admin/user-replica/resync',
    {
      preValidation: [app.requireAdmin, refuseUnknownFields(ResyncBody, 'MSG_USER_RESYNC_INVALID')],
      schema: {
        operationId: 'resyncUserReplica',
        tags: ['messenger-admin'],
        summary:
          'Re-apply pin.identity.users.v1 from its earliest offset to the user replica (all users, or `userIds`): each user\'s newest record is written past the inbox dedupe and the version guard; answers when done, progress in the log',
        body: ResyncBody,
        response: {
          200: ResyncReply,
          400: errorCodes('MSG_USER_RESYNC_INVALID'),
          409: errorCodes('MSG_USER_RESYNC_RUNNING', 'MSG_USER_RESYNC_NEEDS_KAFKA'),
          503: errorCodes('MSG_USER_RESYNC_KAFKA_UNAVAILABLE'),
        },
      },
    },
    async (req) => {
      if (running) throw new AppError('MSG_USER_RESYNC_RUNNING', 'a resync is already running on this replica; wait for its answer', 409);
      running = true;
      try {
        return await resyncUserReplica(resync, req.body.userIds ?? null);
      } catch (err) {
        if (err instanceof ResyncUnavailable) throw new AppError('MSG_USER_RESYNC_NEEDS_KAFKA', err.message, 409);
        if (err instanceof EventBusUnavailableError) {
          throw new AppError('MSG_USER_RESYNC_KAFKA_UNAVAILABLE', 'Kafka cannot be read right now; nothing more was applied, try again', 503, { retryAfterSeconds: 30 });
        }
        throw err;
      } finally {
        running = false;
      }
    },
  );
}

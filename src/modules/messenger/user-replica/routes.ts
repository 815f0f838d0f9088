import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { Db } from '../../../platform/db/index.ts';
import { ErrorBody } from '../../../platform/http/index.ts';
import { Nullable, Timestamp, Uuid } from '../../../platform/types/index.ts';
import { listPhoneConflicts } from './phone-conflicts.ts';

/** The user replica's admin REST surface: phone conflicts for support review (camelCase bodies). */

export const ConflictsQuery = Type.Object(
  {
    status: Type.Optional(Type.Union([Type.Literal('Open'), Type.Literal('Resolved')], { default: 'Open' })),
    after: Type.Optional(Uuid),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 100 })),
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

const tags = ['messenger'];

export function registerUserReplicaRoutes(app: FastifyInstance, db: Db): void {
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
        response: { 200: ConflictsReply, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody },
      },
    },
    async (req) =>
      listPhoneConflicts(db, { status: req.query.status ?? 'Open', after: req.query.after, limit: req.query.limit ?? 100 }),
  );
}

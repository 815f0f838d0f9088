import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type, type TSchema } from '@sinclair/typebox';
import type pg from 'pg';
import { ErrorBody } from '../../platform/http/errors.ts';
import { searchContactByPhone, type ContactSearchDeps } from './contact-search/search.ts';
import { listPhoneConflicts } from './user-replica/phone-conflicts.ts';

/** TypeBox schemas of the messenger's user-replica REST surface (camelCase bodies). */

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
const Uuid = Type.String({ format: 'uuid' });
const Timestamp = Type.String({ format: 'date-time' });

export const ContactSearchQuery = Type.Object(
  { phone: Type.String({ minLength: 1, maxLength: 40, description: 'Phone in any usual notation ("8 (999) 123-45-67", "+7 999 1234567")' }) },
  { additionalProperties: false },
);

export const ContactSearchReply = Type.Object({
  userId: Uuid,
  firstName: Type.String(),
  middleName: Nullable(Type.String()),
  lastName: Type.String({ description: 'Masked ("И***") until the contact is Accepted (INV-MU-3)' }),
  lastNameMasked: Type.Boolean(),
  phoneNumber: Type.String({ description: 'E.164' }),
});

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

export function registerUserReplicaRoutes(app: FastifyInstance, deps: { pool: pg.Pool; search: ContactSearchDeps }): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.get(
    '/api/messenger/contacts/search',
    {
      preHandler: app.requireUser,
      schema: {
        tags,
        summary: 'Find an active user by phone (global contact search); the last name is masked until the contact is Accepted',
        querystring: ContactSearchQuery,
        response: { 200: ContactSearchReply, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 503: ErrorBody },
      },
    },
    async (req) => searchContactByPhone(deps.search, req.principal!.userId, req.query.phone),
  );

  r.get(
    '/api/messenger/admin/user-phone-conflicts',
    {
      preHandler: app.requireAdmin,
      schema: {
        tags,
        summary: 'Phone conflicts of the user replica for support review (MSG_USER_PHONE_CONFLICT, INV-MU-2), Open by default',
        querystring: ConflictsQuery,
        response: { 200: ConflictsReply, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody },
      },
    },
    async (req) =>
      listPhoneConflicts(deps.pool, { status: req.query.status ?? 'Open', after: req.query.after, limit: req.query.limit ?? 100 }),
  );
}

import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { errorCodes, perUserLimit } from '../../../platform/http/index.ts';
import { Nullable, Text, Timestamp, Uuid } from '../../../platform/types/index.ts';
import { acceptContact, listContacts, removeContact, requestContact } from './contacts.ts';
import { listBlocked, setBlocked } from './blacklist.ts';
import type { MessengerContext } from '../context.ts';

const ContactView = Type.Object({
  id: Uuid,
  userId: Uuid,
  status: Type.Union([Type.Literal('Pending'), Type.Literal('Accepted')]),
  direction: Type.Union([Type.Literal('Outgoing'), Type.Literal('Incoming')]),
  createdAt: Timestamp,
  acceptedAt: Nullable(Timestamp),
});
const BlacklistEntry = Type.Object({
  id: Uuid,
  blockedUserId: Uuid,
  status: Type.Union([Type.Literal('Blocked'), Type.Literal('Unblocked')]),
  updatedAt: Timestamp,
});
const ContactRequestBody = Type.Object(
  { phone: Text({ minLength: 1, maxLength: 40, description: 'Phone in any usual notation; resolved to an active user' }) },
  { additionalProperties: false },
);

const tags = ['messenger-contacts'];
/** Each route's own refusals; the kernel's and the messenger guard's are added (messenger/routes.ts). */
const contactNotFound = errorCodes('MSG_CONTACT_NOT_FOUND');

export function registerContactRoutes(app: FastifyInstance, ctx: MessengerContext): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.get(
    '/api/messenger/contacts',
    { preHandler: app.requireUser, schema: { operationId: 'listContacts', tags, summary: 'My contacts and pending requests (both directions)', response: { 200: Type.Object({ items: Type.Array(ContactView) }) } } },
    async (req) => ({ items: await listContacts(ctx.db, req.principal!.userId) }),
  );

  r.post(
    '/api/messenger/contacts/requests',
    {
      preHandler: app.requireUser,
      config: perUserLimit(ctx.options.rateLimits.contactRequests),
      schema: { operationId: 'requestContact', tags, summary: 'Ask the user with this phone to become a contact (pushes contact_request_received)', body: ContactRequestBody,
        response: {
          201: ContactView,
          400: errorCodes('MSG_CONTACT_SEARCH_INVALID_PHONE', 'MSG_CONTACT_SELF'),
          403: errorCodes('MSG_USER_NOT_REPLICATED', 'MSG_USER_BLOCKED'),
          404: errorCodes('MSG_CONTACT_USER_NOT_FOUND'),
          409: errorCodes('MSG_CONTACT_ALREADY_EXISTS'),
        },
      },
    },
    async (req, reply) => reply.code(201).send(await requestContact(ctx, req.principal!.userId, req.body.phone)),
  );

  r.post(
    '/api/messenger/contacts/:contactId/accept',
    {
      preHandler: app.requireUser,
      schema: { operationId: 'acceptContact', tags, summary: 'Accept an incoming request (pushes contact_request_accepted to the requester)', params: Type.Object({ contactId: Uuid }),
        response: { 200: ContactView, 403: errorCodes('MSG_CONTACT_NOT_ADDRESSEE'), 404: contactNotFound, 409: errorCodes('MSG_CONTACT_NOT_PENDING') } },
    },
    async (req) => acceptContact(ctx, req.principal!.userId, req.params.contactId),
  );

  r.delete(
    '/api/messenger/contacts/:contactId',
    {
      preHandler: app.requireUser,
      schema: { operationId: 'removeContact', tags, summary: 'Remove a contact, decline or withdraw a request (pushes contact_removed to the other party)', params: Type.Object({ contactId: Uuid }), response: { 204: { type: 'null' }, 404: contactNotFound } },
    },
    async (req, reply) => {
      await removeContact(ctx, req.principal!.userId, req.params.contactId);
      return reply.code(204).send();
    },
  );

  r.get(
    '/api/messenger/blacklist',
    { preHandler: app.requireUser, schema: { operationId: 'listBlocked', tags, summary: 'Users I blocked', response: { 200: Type.Object({ items: Type.Array(BlacklistEntry) }) } } },
    async (req) => ({ items: await listBlocked(ctx.db, req.principal!.userId) }),
  );

  for (const [method, blocked] of [['PUT', true], ['DELETE', false]] as const) {
    r.route({
      method,
      url: '/api/messenger/blacklist/:userId',
      preHandler: app.requireUser,
      schema: {
        operationId: blocked ? 'blockUser' : 'unblockUser',
        tags,
        summary: blocked
          ? 'Block a user: they cannot message you in a direct chat or call you (UC-MSG-004); pushes blacklist_changed to your devices'
          : 'Unblock a user',
        params: Type.Object({ userId: Uuid }),
        response: { 200: BlacklistEntry, 400: errorCodes('MSG_BLACKLIST_SELF') },
      },
      handler: async (req) => setBlocked(ctx, req.principal!.userId, (req.params as { userId: string }).userId, blocked),
    });
  }
}

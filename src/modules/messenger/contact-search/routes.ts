import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { errorCodes, perUserLimit } from '../../../platform/http/index.ts';
import { Nullable, Text, Timestamp, Uuid } from '../../../platform/types/index.ts';
import { searchContactByPhone, type ContactSearchDeps } from './search.ts';

/** TypeBox schemas of contact search's REST surface (camelCase bodies). */

export const ContactSearchQuery = Type.Object(
  { phone: Text({ minLength: 1, maxLength: 40, description: 'Phone in any usual notation ("8 (999) 123-45-67", "+7 999 1234567")' }) },
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

const tags = ['messenger'];

export function registerContactSearchRoutes(app: FastifyInstance, search: ContactSearchDeps, searchesPerMinute: number): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.get(
    '/api/messenger/contacts/search',
    {
      preHandler: app.requireUser,
      config: perUserLimit(searchesPerMinute),
      schema: {
        operationId: 'searchContacts',
        tags,
        summary: 'Find an active user by phone (global contact search); the last name is masked until the contact is Accepted',
        querystring: ContactSearchQuery,
        // The kernel's and the messenger guard's codes are added (messenger/routes.ts).
        response: {
          200: ContactSearchReply,
          400: errorCodes('MSG_CONTACT_SEARCH_INVALID_PHONE'),
          404: errorCodes('MSG_CONTACT_USER_NOT_FOUND'),
          503: errorCodes('MSG_CONTACT_SEARCH_UNAVAILABLE'),
        },
      },
    },
    async (req) => searchContactByPhone(search, req.principal!.userId, req.query.phone),
  );
}

import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { Db } from '../db/index.ts';
import { ErrorBody } from '../http/index.ts';
import { BoundedInt, Text } from '../types/index.ts';
import type { PushKinds } from './port.ts';
import { eventsAfter } from './replay.ts';

const EventsQuery = Type.Object(
  {
    after: Type.Optional(Text({ minLength: 1, maxLength: 32, description: 'The last cursor the client received (a frame’s Cursor, or a previous `next`); absent: start at the head' })),
    limit: Type.Optional(BoundedInt({ minimum: 1, maximum: 500, default: 100 })),
  },
  { additionalProperties: false },
);

const EventsPage = Type.Object({
  events: Type.Array(
    Type.Object({
      cursor: Type.String({ description: 'This event’s position, opaque' }),
      name: Type.String({ description: 'The hub event name it was pushed as (message_received, chat_updated, …)' }),
      payload: Type.Record(Type.String(), Type.Unknown(), {
        description: 'The frame’s payload as pushed, with Cursor; never a media join token. Its JSON Schema, by name: docs/realtime-frames.schema.json, $defs.<name>',
      }),
    }),
  ),
  next: Type.String({ description: 'The cursor to continue from: ask again with after=next until events is empty' }),
});

/**
 * The resumable per-user event stream: what a client missed while away, of every kind, in order.
 * The push part's route; mounted by the module whose clients resume from it (the messenger, at the
 * path its clients use), inside that module's scope so its guards on its users apply.
 */
export function registerEventStreamRoute(app: FastifyInstance, deps: { db: Db; kinds: PushKinds }): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  r.get(
    '/api/messenger/events',
    {
      preHandler: app.requireUser,
      schema: {
        operationId: 'listEvents',
        tags: ['messenger-events'],
        summary:
          'Every event pushed to you after a cursor, of every kind, in order (resume after a reconnect); without after: no events and the head to start from. 410 MSG_EVENTS_CURSOR_EXPIRED past retention; 400 MSG_EVENTS_CURSOR_AHEAD for a cursor past the head (resync)',
        querystring: EventsQuery,
        response: { 200: EventsPage, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 410: ErrorBody },
      },
    },
    async (req) => eventsAfter(deps.db, deps.kinds, req.principal!.userId, req.query.after, req.query.limit ?? 100),
  );
}

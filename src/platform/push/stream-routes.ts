import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { Db } from '../db/index.ts';
import { errorCodes, named } from '../http/index.ts';
import { BoundedInt, Text } from '../types/index.ts';
import type { PushKinds } from './port.ts';
import { eventsAfter, type StreamEvent } from './replay.ts';
import { PUSH_DEFAULTS } from './defaults.ts';

const EventsQuery = Type.Object(
  {
    after: Type.Optional(Text({ minLength: 1, maxLength: 32, description: 'The last cursor the client received (a frame’s Cursor, or a previous `next`); absent: start at the head' })),
    limit: Type.Optional(BoundedInt({ minimum: 1, maximum: 500, default: PUSH_DEFAULTS.streamPageDefault })),
  },
  { additionalProperties: false },
);

/** The page; its events are described by the kinds' frames (stream-schema.ts). */
const eventsPage = (kinds: PushKinds) =>
  named(
    'EventsPage',
    Type.Object({
      events: Type.Array(Type.Unsafe<StreamEvent>(kinds.streamEvent), {
        description: 'Each event as pushed: its name and its payload, the frame with Cursor (never a media join token); a client ignores names and fields it does not know',
      }),
      next: Type.String({ description: 'The cursor to continue from: ask again with after=next until events is empty' }),
    }),
  );

/** Where clients resume from; the messenger's old path answers the same until its clients move. */
export const EVENT_STREAM_PATH = '/api/events';
export const DEPRECATED_EVENT_STREAM_PATH = '/api/messenger/events';

const SUMMARY =
  'Every event pushed to you after a cursor, of every kind and module, in order (resume after a reconnect); without after: no events and the head to start from. 410 MSG_EVENTS_CURSOR_EXPIRED past retention; 400 MSG_EVENTS_CURSOR_AHEAD for a cursor past the head (resync)';

/**
 * The resumable per-user event stream: what a client missed while away, of every kind, in order.
 * The push part's own route, registered by the app once modules registered kinds; each module's
 * refusal of a reader (`refuseReader`) applies. The messenger's path, where clients resumed before
 * the stream was the kernel's, stays as a deprecated alias of the same operation.
 */
export function registerEventStreamRoutes(app: FastifyInstance, deps: { db: Db; kinds: PushKinds }): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  // The kernel adds the input, token and availability codes (openapi-components.ts).
  // The modules' refusals of a reader: registered before this route is (refuseReaderCodes).
  const refusals = deps.kinds.readerRefusalCodes();
  const response = {
    200: eventsPage(deps.kinds),
    400: errorCodes('MSG_EVENTS_CURSOR_INVALID', 'MSG_EVENTS_CURSOR_AHEAD'),
    ...(refusals.length > 0 ? { 403: errorCodes(...(refusals as [string, ...string[]])) } : {}),
    410: errorCodes('MSG_EVENTS_CURSOR_EXPIRED'),
  };
  const handler = async (req: { principal?: { userId: string }; query: { after?: string; limit?: number } }) =>
    eventsAfter(deps.db, deps.kinds, req.principal!.userId, req.query.after, req.query.limit ?? PUSH_DEFAULTS.streamPageDefault);
  // The schema describes the events by their frames for the document; the page goes out as built.
  const serializerCompiler = () => (data: unknown) => JSON.stringify(data);
  // One page in progress per user (user-concurrency.ts): a page of 500 is rebuilt here, and a client reads page after page.
  const config = { userConcurrency: 1 };
  r.get(EVENT_STREAM_PATH, { preHandler: app.requireUser, config, serializerCompiler, schema: { operationId: 'listEvents', tags: ['events'], summary: SUMMARY, querystring: EventsQuery, response } }, handler);
  r.get(
    DEPRECATED_EVENT_STREAM_PATH,
    {
      preHandler: app.requireUser,
      config,
      serializerCompiler,
      schema: {
        operationId: 'listMessengerEvents',
        tags: ['events'],
        deprecated: true,
        summary: `Deprecated: the same as GET ${EVENT_STREAM_PATH}, where clients resume now; kept until clients of this path are gone`,
        querystring: EventsQuery,
        response,
      },
    },
    handler,
  );
}

import type { FastifyInstance, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import { addAfterBearerGuard, addErrorCodes } from '../../platform/http/index.ts';
import { registerCallRoutes } from './calls/call-routes.ts';
import { registerConferenceRoutes } from './calls/conference-routes.ts';
import { registerChatRoutes } from './chats/routes.ts';
import { registerContactSearchRoutes } from './contact-search/routes.ts';
import type { ContactSearchDeps } from './contact-search/search.ts';
import { registerContactRoutes } from './contacts/routes.ts';
import { registerRealtimeOutboxRoutes } from '../../platform/push/index.ts';
import { refuseUnknownFields } from './admin-body.ts';
import { registerPresenceRoutes } from './presence/presence.ts';
import type { MessengerContext } from './context.ts';
import type { CallsContext } from './calls/media-join.ts';
import type { MessagesContext } from './messages/context.ts';
import type { FilesDeps } from './files/files.ts';
import { registerMessageRoutes } from './messages/routes.ts';
import { registerFileRoutes } from './files/routes.ts';
import { registerUserReplicaRoutes } from './user-replica/routes.ts';
import { refuseInactiveUser } from './user-replica/replica-reads.ts';

/**
 * Every REST route of the messenger, one register function per part: user tokens and record-level
 * rules for chats, messages, contacts, calls and search; admin tokens for the realtime outbox
 * runbook and the phone-conflict review.
 */
/** The shared context with every part's own extension: what index.ts builds and each part's routes take their share of. */
export type MessengerPartsContext = CallsContext & MessagesContext & { files: FilesDeps };

export function registerMessengerRoutes(app: FastifyInstance, ctx: MessengerPartsContext, search: ContactSearchDeps): void {
  refuseInactiveUsers(app, ctx);
  registerChatRoutes(app, ctx);
  registerMessageRoutes(app, ctx);
  // Uploads count against the message-send limit: each is a message about to be sent.
  registerFileRoutes(app, ctx.files, ctx.options.rateLimits.messageSends);
  registerContactRoutes(app, ctx);
  registerCallRoutes(app, ctx);
  registerConferenceRoutes(app, ctx);
  registerPresenceRoutes(app, ctx.db, ctx.hub);
  // The push part's runbook calls, at the messenger's admin path, filtering by every registered kind (any module's).
  registerRealtimeOutboxRoutes(app, { db: ctx.db, clock: ctx.clock, log: ctx.log, kinds: ctx.push.kinds.names(), refuseUnknownFields });
  registerContactSearchRoutes(app, search, ctx.options.rateLimits.contactSearches);
  registerUserReplicaRoutes(app, ctx.db, { ...ctx.userSync, db: ctx.db, openTopicReader: ctx.openTopicReader });
}

/**
 * Product decision: a user whose replica row is inactive (Blocked, Archived) is refused on every
 * authenticated messenger route, reads included (403 MSG_USER_INACTIVE, added to each route's
 * documented 403 codes). Put right after the route's token check, so no route can forget it; writes
 * check again inside their transaction.
 */
function refuseInactiveUsers(app: FastifyInstance, ctx: MessengerContext): void {
  const check: preHandlerAsyncHookHandler = async (req: FastifyRequest) => {
    if (req.principal) await refuseInactiveUser(ctx.db, req.principal.userId);
  };
  app.addHook('onRoute', (route) => {
    const operationId = (route.schema as { operationId?: string } | undefined)?.operationId;
    if (operationId && CHECKED_BY_THEIR_STATEMENT.has(operationId)) return;
    if (addAfterBearerGuard(app, route, check)) addErrorCodes(route.schema, 403, ['MSG_USER_INACTIVE']);
  });
}

/**
 * Routes whose one statement judges the caller's replica activity itself and refuses first with
 * MSG_USER_INACTIVE (send.ts): the early read would be a second round trip to PostgreSQL on the
 * hottest route, for an answer the statement gives anyway.
 */
const CHECKED_BY_THEIR_STATEMENT = new Set(['sendMessage']);

import type { FastifyInstance } from 'fastify';
import { registerCallRoutes } from './calls/call-routes.ts';
import { registerConferenceRoutes } from './calls/conference-routes.ts';
import { registerChatRoutes } from './chats/routes.ts';
import { registerContactSearchRoutes } from './contact-search/routes.ts';
import type { ContactSearchDeps } from './contact-search/search.ts';
import { registerContactRoutes } from './contacts/routes.ts';
import type { MessengerContext } from './context.ts';
import { registerMessageRoutes } from './messages/routes.ts';
import { registerRealtimeOutboxRoutes } from './realtime-dispatch/runbook-routes.ts';
import { registerUserReplicaRoutes } from './user-replica/routes.ts';

/**
 * Every REST route of the messenger, one register function per part: user tokens and record-level
 * rules for chats, messages, contacts, calls and search; admin tokens for the realtime outbox
 * runbook and the phone-conflict review.
 */
export function registerMessengerRoutes(app: FastifyInstance, ctx: MessengerContext, search: ContactSearchDeps): void {
  registerChatRoutes(app, ctx);
  registerMessageRoutes(app, ctx);
  registerContactRoutes(app, ctx);
  registerCallRoutes(app, ctx);
  registerConferenceRoutes(app, ctx);
  registerRealtimeOutboxRoutes(app, ctx);
  registerContactSearchRoutes(app, search, ctx.settings.MESSENGER_RATE_LIMIT_CONTACT_SEARCHES_PER_MINUTE);
  registerUserReplicaRoutes(app, ctx.db, { ...ctx.userSync, db: ctx.db, openTopicReader: ctx.openTopicReader });
}

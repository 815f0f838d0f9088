import type { FastifyInstance } from 'fastify';
import { registerCallRoutes } from './calls/call-routes.ts';
import { registerChatRoutes } from './chats/routes.ts';
import { registerConferenceRoutes } from './calls/conference-routes.ts';
import { registerContactRoutes } from './contacts/routes.ts';
import { registerMessageRoutes } from './messages/routes.ts';
import type { RealtimeContext } from './context.ts';
import { registerRealtimeOutboxRoutes } from './realtime-dispatch/runbook-routes.ts';

/** Every REST route of the messenger's realtime part (user tokens, record-level rules; runbook routes admin). */
export function registerRealtimeRoutes(app: FastifyInstance, ctx: RealtimeContext): void {
  registerChatRoutes(app, ctx);
  registerMessageRoutes(app, ctx);
  registerContactRoutes(app, ctx);
  registerCallRoutes(app, ctx);
  registerConferenceRoutes(app, ctx);
  registerRealtimeOutboxRoutes(app, ctx);
}

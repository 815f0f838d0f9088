import type { FastifyInstance } from 'fastify';
import { registerCallRoutes } from './calls-routes.ts';
import { registerChatRoutes } from './chats-routes.ts';
import { registerConferenceRoutes } from './conferences-routes.ts';
import { registerContactRoutes } from './contacts-realtime-routes.ts';
import { registerMessageRoutes } from './messages-routes.ts';
import type { RealtimeContext } from './realtime-context.ts';
import { registerRealtimeOutboxRoutes } from './realtime-outbox-routes.ts';

/** Every REST route of the messenger's realtime part (user tokens, record-level rules; runbook routes admin). */
export function registerRealtimeRoutes(app: FastifyInstance, ctx: RealtimeContext): void {
  registerChatRoutes(app, ctx);
  registerMessageRoutes(app, ctx);
  registerContactRoutes(app, ctx);
  registerCallRoutes(app, ctx);
  registerConferenceRoutes(app, ctx);
  registerRealtimeOutboxRoutes(app, ctx);
}

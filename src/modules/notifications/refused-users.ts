import type { FastifyInstance, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import { addAfterBearerGuard, addErrorCodes, bearerGuardOf } from '../../platform/http/index.ts';
import type { Db } from '../../platform/db/index.ts';
import type { PushKinds } from '../../platform/push/index.ts';

/**
 * A user the event stream refuses (the messenger's blocked and archived users: docs/security.md,
 * "Blocked and archived users lose access") is refused the notification routes a user calls too —
 * the in-app feed, mark-read and push tokens — with the same 403: the feed is what the stream
 * carries as `notification_status_changed`, and a push token would keep reaching a device of a user
 * the platform blocked. Admin routes are left to the admin checks. The refusal is the push part's
 * (`refuseReader`), so this module names no other module; its codes are known once every module has
 * registered its kinds, so they are documented when the app is ready.
 */
export function refuseStreamRefusedUsers(app: FastifyInstance, kinds: Pick<PushKinds, 'refuseReader' | 'readerRefusalCodes'>, db: Db): void {
  const check: preHandlerAsyncHookHandler = async (req: FastifyRequest) => {
    if (req.principal) await kinds.refuseReader(db, req.principal.userId);
  };
  // A GET's HEAD twin arrives with the same schema object.
  const guarded = new Set<unknown>();
  app.addHook('onRoute', (route) => {
    const guard = bearerGuardOf(app, route);
    if (!guard || guard.handlers[guard.index] !== app.requireUser) return;
    if (addAfterBearerGuard(app, route, check)) guarded.add(route.schema);
  });
  app.addHook('onReady', async () => {
    const codes = kinds.readerRefusalCodes();
    if (codes.length > 0) for (const schema of guarded) addErrorCodes(schema, 403, codes as [string, ...string[]]);
  });
}

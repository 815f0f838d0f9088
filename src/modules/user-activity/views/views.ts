import { newId } from '../../../platform/time.ts';
import { deviceSecretInvalid, ERROR, sessionNotFound, sessionViewLimitReached } from '../errors.ts';
import { AppError } from '../../../platform/http/index.ts';
import type { ActivityDeps } from '../sessions/sessions.ts';
import { sessionSecretHash, touchActiveSession } from '../sessions/session-sql.ts';
import { deviceSecretMatches } from '../sessions/device-secret.ts';
import { insertView, sessionHasViews, touchActiveView, viewSecretHash, type ViewRow } from './view-sql.ts';

/** Online property-object view operations (UC-ACT-002). Lock order: the session, then the view. */

/**
 * Most views one tracking session may hold. A person browsing for hours opens a few hundred; a
 * script replaying one session's secret could otherwise store views (each up to 8 KiB of filter
 * snapshot) without end, limited only by the per-address rate.
 */
export const MAX_VIEWS_PER_SESSION = 1000;

export interface OpenViewInput {
  sessionId: string;
  propertyObjectId: string;
  viewSource: string;
  filterSnapshot: unknown;
}

/**
 * Opens a view in an Active session; opening counts as activity of the session. The caller
 * proves the session with its device secret before anything is written.
 */
export async function openView(deps: ActivityDeps, input: OpenViewInput, deviceSecret: string): Promise<ViewRow> {
  const now = deps.clock.now();
  return deps.db.transaction(async (tx) => {
    const stored = await sessionSecretHash(tx, input.sessionId);
    if (!stored) throw sessionNotFound('no active session with this id; start a session first');
    if (!deviceSecretMatches(stored.deviceSecretHash, deviceSecret)) throw deviceSecretInvalid();
    const session = await touchActiveSession(tx, input.sessionId, now);
    if (!session) throw sessionNotFound('no active session with this id; start a session first');
    // Counted under the session's row lock (touched above): concurrent opens cannot both slip under the cap.
    if (await sessionHasViews(tx, input.sessionId, MAX_VIEWS_PER_SESSION)) throw sessionViewLimitReached(MAX_VIEWS_PER_SESSION);
    return insertView(tx, { id: newId(), ...input, now });
  });
}

/**
 * View heartbeat: also activity of its session (touched first — the session-then-view order).
 * `accepted: false` when the view is already Inactive (INV-LV-003): the client opens a new view.
 * The device secret of the view's session is checked before anything is written.
 */
export async function heartbeatView(deps: ActivityDeps, id: string, deviceSecret: string): Promise<{ accepted: boolean }> {
  const view = await viewSecretHash(deps.db, id);
  if (!view) throw new AppError(ERROR.viewNotFound, 'no property-object view with this id', 404);
  if (!deviceSecretMatches(view.deviceSecretHash, deviceSecret)) throw deviceSecretInvalid();
  const now = deps.clock.now();
  return deps.db.transaction(async (tx) => {
    await touchActiveSession(tx, view.sessionId, now);
    return { accepted: await touchActiveView(tx, id, now) };
  });
}

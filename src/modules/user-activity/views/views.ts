import { newId } from '../../../platform/time.ts';
import { inTransaction } from '../db.ts';
import { ERROR, sessionNotFound } from '../errors.ts';
import { AppError } from '../../../platform/http/index.ts';
import type { ActivityDeps } from '../sessions/sessions.ts';
import { touchActiveSession } from '../sessions/session-sql.ts';
import { getView, insertView, touchActiveView, type ViewRow } from './view-sql.ts';

/** Online property-object view operations (UC-ACT-002). Lock order: the session, then the view. */

export interface OpenViewInput {
  sessionId: string;
  propertyObjectId: string;
  viewSource: string;
  filterSnapshot: unknown;
}

/** Opens a view in an Active session; opening counts as activity of the session. */
export async function openView(deps: ActivityDeps, input: OpenViewInput): Promise<ViewRow> {
  const now = deps.clock.now();
  return inTransaction(deps.pool, async (c) => {
    const session = await touchActiveSession(c, input.sessionId, now);
    if (!session) throw sessionNotFound('no active session with this id; start a session first');
    return insertView(c, { id: newId(), ...input, now });
  });
}

/**
 * View heartbeat: also activity of its session (touched first — the session-then-view order).
 * `accepted: false` when the view is already Inactive (INV-LV-003): the client opens a new view.
 */
export async function heartbeatView(deps: ActivityDeps, id: string): Promise<{ accepted: boolean }> {
  const view = await getView(deps.pool, id);
  if (!view) throw new AppError(ERROR.viewNotFound, 'no property-object view with this id', 404);
  const now = deps.clock.now();
  return inTransaction(deps.pool, async (c) => {
    await touchActiveSession(c, view.sessionId, now);
    return { accepted: await touchActiveView(c, id, now) };
  });
}

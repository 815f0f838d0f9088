import type pg from 'pg';
import { newId, type Clock } from '../../../platform/time.ts';
import { closeLockedSessions } from '../closer/close.ts';
import type { Db, Queryable } from '../../../platform/db/index.ts';
import { inTransaction } from '../db.ts';
import { sessionNotFound } from '../errors.ts';
import { inactivityCutoff, isIdle, linkDecision } from '../rules.ts';
import {
  getSession,
  insertSession,
  lockActiveSessionOfDevice,
  lockSession,
  sessionDevice,
  setSessionUser,
  touchActiveSession,
  type SessionRow,
} from './session-sql.ts';

/**
 * Online session operations (UC-ACT-001). Every writer locks the session first and its views
 * after it — the order the closer uses — so none of them can deadlock with another.
 */

export interface ActivityDeps {
  pool: pg.Pool;
  clock: Clock;
  inactivityThresholdMs: number;
}

export interface StartSessionInput {
  anonymousId: string;
  userAgent: string | null;
  ipAddress: string | null;
  correlationId: string | null;
}

/** How many times a start retries when a concurrent start or close changes the device's session under it. */
const START_ATTEMPTS = 3;

/**
 * The device's Active session after this call. A live one is reused (its activity moves on); one
 * already idle past the threshold is closed for inactivity, as the closer would, and a new one
 * starts — a device never has two Active sessions (ux_sessions_active_anonymous_id).
 */
async function startOnDevice(
  c: Queryable,
  tx: Db,
  deps: ActivityDeps,
  input: StartSessionInput & { userId: string | null },
  now: Date,
): Promise<{ session: SessionRow; created: boolean }> {
  for (let attempt = 0; attempt < START_ATTEMPTS; attempt += 1) {
    const existing = await lockActiveSessionOfDevice(c, input.anonymousId);
    if (existing) {
      if (!isIdle(existing.lastActivityAt, inactivityCutoff(now, deps.inactivityThresholdMs))) {
        const touched = await touchActiveSession(c, existing.id, now);
        if (touched) return { session: touched, created: false };
      } else {
        await closeLockedSessions(c, tx, [existing], now, 'Inactivity', input.correlationId);
      }
    }
    const inserted = await insertSession(c, {
      id: newId(),
      anonymousId: input.anonymousId,
      userId: input.userId,
      userAgent: input.userAgent,
      ipAddress: input.ipAddress,
      now,
    });
    if (inserted) return { session: inserted, created: true };
    // A concurrent start on the same device committed first: take its session on the next pass.
  }
  throw new Error('session start kept losing to concurrent starts on the same device');
}

export async function startSession(deps: ActivityDeps, input: StartSessionInput): Promise<{ session: SessionRow; created: boolean }> {
  const now = deps.clock.now();
  return inTransaction(deps.pool, (c, tx) => startOnDevice(c, tx, deps, { ...input, userId: null }, now));
}

/**
 * Session heartbeat: moves LastActivityAt. A session that is no longer Active (closed by the closer
 * or switched) is not revived: a new one starts for the same device and user and is returned with
 * `restarted: true` (INV-SES-003), so no activity is lost.
 */
export async function heartbeatSession(
  deps: ActivityDeps,
  id: string,
  correlationId: string | null,
): Promise<{ session: SessionRow; restarted: boolean }> {
  const now = deps.clock.now();
  return inTransaction(deps.pool, async (c, tx) => {
    const touched = await touchActiveSession(c, id, now);
    if (touched) return { session: touched, restarted: false };
    const old = await getSession(c, id);
    if (!old) throw sessionNotFound('no session with this id');
    const device = await sessionDevice(c, id);
    const { session } = await startOnDevice(
      c,
      tx,
      deps,
      { anonymousId: old.anonymousId, userId: old.userId, userAgent: device.userAgent, ipAddress: device.ipAddress, correlationId },
      now,
    );
    return { session, restarted: true };
  });
}

/**
 * Links the Active session to the signed-in user. A guest session takes the user; a session of
 * another user is closed as Switched (with its views and events) and a new one starts for this
 * user on the same device. No Active session → USER_ACTIVITY_SESSION_NOT_FOUND (the client starts one).
 */
export async function linkSession(
  deps: ActivityDeps,
  id: string,
  userId: string,
  correlationId: string | null,
): Promise<{ session: SessionRow; switched: boolean }> {
  const now = deps.clock.now();
  return inTransaction(deps.pool, async (c, tx) => {
    const session = await lockSession(c, id);
    if (!session || session.status !== 'Active') throw sessionNotFound();
    const decision = linkDecision(session.userId, userId);
    if (decision === 'switch') {
      const device = await sessionDevice(c, id);
      await closeLockedSessions(c, tx, [session], now, 'Switched', correlationId);
      const started = await insertSession(c, {
        id: newId(),
        anonymousId: session.anonymousId,
        userId,
        userAgent: device.userAgent,
        ipAddress: device.ipAddress,
        now,
      });
      if (!started) throw new Error('switched session: the device already has another Active session');
      return { session: started, switched: true };
    }
    const linked =
      decision === 'link' ? await setSessionUser(c, id, userId, now) : await touchActiveSession(c, id, now);
    return { session: linked!, switched: false };
  });
}

import { newId, type Clock } from '../../../platform/time.ts';
import { closeLockedSessions } from '../closer/close.ts';
import type { Db } from '../../../platform/db/index.ts';
import { deviceSecretInvalid, sessionNotFound } from '../errors.ts';
import { inactivityCutoff, isIdle, linkDecision } from '../rules.ts';
import {
  getSession,
  insertSession,
  lockActiveSessionOfDevice,
  lockSession,
  sessionDevice,
  sessionSecretHash,
  setSessionUser,
  touchActiveSession,
  type SessionRow,
} from './session-sql.ts';
import { deviceSecretMatches, hashDeviceSecret, newDeviceSecret } from './device-secret.ts';

/**
 * Online session operations (UC-ACT-001). Every writer locks the session first and its views
 * after it — the order the closer uses — so none of them can deadlock with another.
 */

export interface ActivityDeps {
  db: Db;
  clock: Clock;
  inactivityThresholdMs: number;
}

export interface StartSessionInput {
  anonymousId: string;
  userAgent: string | null;
  ipAddress: string | null;
  correlationId: string | null;
  /** The device secret an earlier start returned (header X-Device-Secret), if the client has one. */
  deviceSecret: string | null;
}

/** How many times a start retries when a concurrent start or close changes the device's session under it. */
const START_ATTEMPTS = 3;

interface DeviceStart {
  anonymousId: string;
  userId: string | null;
  userAgent: string | null;
  ipAddress: string | null;
  correlationId: string | null;
  /** Digest of the secret that identifies the device: proven by the caller, or fresh. */
  deviceSecretHash: string;
}

/**
 * The device's Active session after this call. A live one is reused (its activity moves on); one
 * already idle past the threshold is closed for inactivity, as the closer would, and a new one
 * starts — a device (AnonymousId + secret) never has two Active sessions (ux_sessions_active_device).
 */
async function startOnDevice(
  tx: Db,
  deps: ActivityDeps,
  input: DeviceStart,
  now: Date,
): Promise<{ session: SessionRow; created: boolean }> {
  for (let attempt = 0; attempt < START_ATTEMPTS; attempt += 1) {
    const existing = await lockActiveSessionOfDevice(tx, input.anonymousId, input.deviceSecretHash);
    if (existing) {
      if (!isIdle(existing.lastActivityAt, inactivityCutoff(now, deps.inactivityThresholdMs))) {
        const touched = await touchActiveSession(tx, existing.id, now);
        if (touched) return { session: touched, created: false };
      } else {
        await closeLockedSessions(tx, [existing], now, 'Inactivity', input.correlationId);
      }
    }
    const inserted = await insertSession(tx, {
      id: newId(),
      anonymousId: input.anonymousId,
      userId: input.userId,
      userAgent: input.userAgent,
      ipAddress: input.ipAddress,
      deviceSecretHash: input.deviceSecretHash,
      now,
    });
    if (inserted) return { session: inserted, created: true };
    // A concurrent start on the same device committed first: take its session on the next pass.
  }
  throw new Error('session start kept losing to concurrent starts on the same device');
}

/**
 * Starts or resumes the caller's own session. The device is the AnonymousId together with its
 * secret: a caller presenting the secret of the device's Active session resumes it and keeps that
 * secret; anyone else — no secret, a wrong one, or a device whose session has ended — gets a new
 * session with a fresh secret. An AnonymousId alone is not a credential: knowing another device's
 * never yields that device's session id or UserId.
 */
export async function startSession(
  deps: ActivityDeps,
  input: StartSessionInput,
): Promise<{ session: SessionRow; created: boolean; deviceSecret: string }> {
  const now = deps.clock.now();
  const { anonymousId, userAgent, ipAddress, correlationId } = input;
  return deps.db.transaction(async (tx) => {
    if (input.deviceSecret !== null) {
      const deviceSecretHash = hashDeviceSecret(input.deviceSecret);
      if (await lockActiveSessionOfDevice(tx, anonymousId, deviceSecretHash)) {
        // Proven: this is the caller's device; it resumes (or, idle, is closed and followed) with the same secret.
        const started = await startOnDevice(tx, deps, { anonymousId, userId: null, userAgent, ipAddress, correlationId, deviceSecretHash }, now);
        return { ...started, deviceSecret: input.deviceSecret };
      }
    }
    const fresh = newDeviceSecret();
    const started = await startOnDevice(tx, deps, { anonymousId, userId: null, userAgent, ipAddress, correlationId, deviceSecretHash: fresh.hash }, now);
    return { ...started, deviceSecret: fresh.secret };
  });
}

/**
 * The session's stored secret digest, checked against the presented secret before anything is
 * written: no session → USER_ACTIVITY_SESSION_NOT_FOUND (404), another secret → 403.
 */
async function proveSession(tx: Db, id: string, deviceSecret: string): Promise<string> {
  const stored = await sessionSecretHash(tx, id);
  if (!stored) throw sessionNotFound('no session with this id');
  if (!deviceSecretMatches(stored.deviceSecretHash, deviceSecret)) throw deviceSecretInvalid();
  return stored.deviceSecretHash!;
}

/**
 * Session heartbeat: moves LastActivityAt. A session that is no longer Active (closed by the closer
 * or switched) is not revived: a new one starts for the same device and user and is returned with
 * `restarted: true` (INV-SES-003), so no activity is lost.
 */
export async function heartbeatSession(
  deps: ActivityDeps,
  id: string,
  deviceSecret: string,
  correlationId: string | null,
): Promise<{ session: SessionRow; restarted: boolean }> {
  const now = deps.clock.now();
  return deps.db.transaction(async (tx) => {
    const deviceSecretHash = await proveSession(tx, id, deviceSecret);
    const touched = await touchActiveSession(tx, id, now);
    if (touched) return { session: touched, restarted: false };
    const old = await getSession(tx, id);
    if (!old) throw sessionNotFound('no session with this id');
    const device = await sessionDevice(tx, id);
    const { session } = await startOnDevice(
      tx,
      deps,
      // The same device, proven: the new session keeps its secret.
      { anonymousId: old.anonymousId, userId: old.userId, userAgent: device.userAgent, ipAddress: device.ipAddress, correlationId, deviceSecretHash },
      now,
    );
    return { session, restarted: true };
  });
}

/**
 * Links the Active session to the signed-in user; the caller must also present the session's
 * device secret (a token alone must not let a user take over another device's session). A guest session takes the user; a session of
 * another user is closed as Switched (with its views and events) and a new one starts for this
 * user on the same device. No Active session → USER_ACTIVITY_SESSION_NOT_FOUND (the client starts one).
 */
export async function linkSession(
  deps: ActivityDeps,
  id: string,
  userId: string,
  deviceSecret: string,
  correlationId: string | null,
): Promise<{ session: SessionRow; switched: boolean }> {
  const now = deps.clock.now();
  return deps.db.transaction(async (tx) => {
    const session = await lockSession(tx, id);
    if (!session) throw sessionNotFound();
    const deviceSecretHash = await proveSession(tx, id, deviceSecret);
    if (session.status !== 'Active') throw sessionNotFound();
    const decision = linkDecision(session.userId, userId);
    if (decision === 'switch') {
      const device = await sessionDevice(tx, id);
      await closeLockedSessions(tx, [session], now, 'Switched', correlationId);
      const started = await insertSession(tx, {
        id: newId(),
        anonymousId: session.anonymousId,
        userId,
        userAgent: device.userAgent,
        ipAddress: device.ipAddress,
        deviceSecretHash, // the same device: its secret carries over to the switched session
        now,
      });
      if (!started) throw new Error('switched session: the device already has another Active session');
      return { session: started, switched: true };
    }
    const linked =
      decision === 'link' ? await setSessionUser(tx, id, userId, now) : await touchActiveSession(tx, id, now);
    return { session: linked!, switched: false };
  });
}

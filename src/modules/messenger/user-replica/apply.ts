import type { Db } from '../../../platform/db/index.ts';
import { PoisonMessageError, type EventEnvelope } from '../../../platform/events/index.ts';
import { maskName, maskPhone, type Logger } from '../../../platform/observability/index.ts';
import type { Clock } from '../../../platform/time.ts';
import {
  applyIfCannotCollide,
  handOverReleasedPhone,
  isLivePhoneViolation,
  readReplicaState,
  writeReplica,
  type ReplicaWrite,
} from './replica-sql.ts';
import type { UserSyncMetrics } from './metrics.ts';
import { enqueueRealtime, type PushWriter } from '../model/push-rows.ts';
import {
  USER_SYNC_ERRORS,
  UserSyncRejection,
  decidePhone,
  isStale,
  mayCollide,
  payloadIds,
  readUserSnapshot,
  releasedPhone,
  type PhoneDecision,
  type ReplicaState,
  type UserSnapshot,
} from './rules.ts';

/**
 * One UserUpserted event against the user replica (seed 002 steps 1–5), inside the consumer's
 * transaction: the single path, and the path the batch handler sends unusual events through.
 */

export interface UserSyncDeps {
  clock: Clock;
  log: Logger;
  metrics: UserSyncMetrics;
  phoneRegion: string;
  partitionsConcurrently: number;
  /**
   * What a user turned inactive leaves in the calls part, in the replica write's transaction (their
   * calls end, their conference seats are left: calls/deactivation.ts). A callback wired in the
   * messenger's index.ts, so the replica, on a lower floor, does not import the calls part above it.
   */
  leaveMediaSessions: (push: PushWriter, tx: Db, userIds: readonly string[], now: Date) => Promise<void>;
  /** The push rows' writer (ModuleDeps.push): UserDeactivated, and the frames of the calls they leave. */
  push: PushWriter;
}

export type UserSyncOutcome = 'created' | 'updated' | 'stale';

/** The trace of an event: its message id and the producer's correlation id, on every line. */
export interface EventIds {
  messageId: string;
  correlationId?: string;
}

/**
 * Where an event's metrics and log lines go: out at once on the single path; on the batch path,
 * queued until its last statement succeeded, so a batch that falls back has counted nothing.
 */
export type Report = (emit: () => void) => void;
const immediately: Report = (emit) => emit();

/** Writes tried per event: the decision, again after a concurrent writer took a phone, then without a phone. */
const MAX_WRITE_ATTEMPTS = 3;

export const eventIds = (event: EventEnvelope<unknown>): EventIds =>
  event.correlationId ? { messageId: event.messageId, correlationId: event.correlationId } : { messageId: event.messageId };

/**
 * Step 2: the event's snapshot. An invalid one is logged ('failed', only when `logRejection`:
 * the batch path leaves that line to the single path it falls back to) and thrown as poison.
 * The 'consumed' and truncation lines go to `report`.
 */
export function readEvent(event: EventEnvelope<unknown>, deps: UserSyncDeps, report: Report, logRejection: boolean): UserSnapshot {
  const { log } = deps;
  const ids = eventIds(event);
  if (log.isLevelEnabled('debug')) report(() => log.debug({ ...ids, occurredAt: event.occurredAt }, 'consumed'));
  let snapshot: UserSnapshot;
  try {
    snapshot = readUserSnapshot(event.payload, deps.phoneRegion);
  } catch (err) {
    if (!(err instanceof UserSyncRejection)) throw err;
    if (logRejection) log.warn({ ...ids, ...payloadIds(event.payload), code: err.code, reason: err.message }, 'failed');
    throw new PoisonMessageError(err.code, err.message);
  }
  if (snapshot.truncated.length > 0) {
    const s = snapshot;
    report(() => log.warn({ ...ids, userId: s.userId, version: s.version, fields: s.truncated, maxLength: 128 }, 'name longer than 128 characters truncated'));
  }
  return snapshot;
}

/** One UserUpserted event against the replica, inside the consumer's transaction. */
export async function applyUserUpserted(event: EventEnvelope<unknown>, tx: Db, deps: UserSyncDeps): Promise<UserSyncOutcome> {
  const started = performance.now();
  const snapshot = readEvent(event, deps, immediately, true);
  const outcome = await applySnapshot(tx, snapshot, eventIds(event), deps);
  deps.metrics.observeEvent(event.occurredAt);
  deps.metrics.consumeDuration.observe(performance.now() - started);
  return outcome;
}

/**
 * `force` (the runbook resync only) writes the snapshot over any replica version, past the version
 * guard, with the same phone-conflict rules, search queueing and deactivation push as any write.
 */
export async function applySnapshot(
  tx: Db,
  snapshot: UserSnapshot,
  ids: EventIds,
  deps: UserSyncDeps,
  report = immediately,
  force = false,
): Promise<UserSyncOutcome> {
  const now = deps.clock.now();
  const stale = (existing: ReplicaState | null) => !force && isStale(existing, snapshot.version);
  // Most events cannot collide on the live-phone index: one statement decides and writes them.
  const fast = await applyIfCannotCollide(tx, snapshot, now, force);
  if (fast.operation) {
    const operation = fast.operation;
    report(() => applied(deps, snapshot, ids, operation, { phoneNumber: snapshot.phoneNumber, conflict: null }));
    await enqueueDeactivations(tx, deactivated([[fast.existing, snapshot]]), now, deps);
    await handOverReleased(tx, releasedPhone(fast.existing, snapshot), now, deps, ids, report);
    return operation;
  }
  if (stale(fast.existing)) return skippedStale(deps, snapshot, ids, fast.existing!, report);

  // The slow path: a taken phone, or a live row taking a new phone. Read, decide, write.
  for (let attempt = 1; ; attempt++) {
    const { existing, holders } = await readReplicaState(tx, snapshot.userId, snapshot.phoneNumber);
    if (stale(existing)) return skippedStale(deps, snapshot, ids, existing!, report);
    if (attempt > MAX_WRITE_ATTEMPTS + 1) throw new Error('replica write did not settle; retried with backoff');
    const decision = decidePhone(snapshot, existing, holders, attempt >= MAX_WRITE_ATTEMPTS);
    const write: ReplicaWrite = { snapshot, phoneNumber: decision.phoneNumber, conflict: decision.conflict, messageId: ids.messageId, now, force };
    const next = { phoneNumber: decision.phoneNumber, isActive: snapshot.isActive };
    let written: boolean;
    if (existing === null) {
      // ON CONFLICT DO NOTHING: a concurrent writer that took the phone makes it write nothing.
      written = await writeReplica(tx, 'insert', write);
    } else if (mayCollide(existing, next) && attempt < MAX_WRITE_ATTEMPTS) {
      // The row takes a live phone it did not hold: a concurrent writer may take it first and the
      // index refuses the update; a savepoint keeps that from aborting the consumer's transaction.
      written = await tx
        .transaction(async (sp) => writeReplica(sp, 'update', write))
        .catch((err: unknown) => {
          if (isLivePhoneViolation(err)) return false;
          throw err;
        });
    } else {
      written = await writeReplica(tx, 'update', write);
    }
    if (!written) {
      // Taken by a concurrent writer (or a newer version raced in): read again; the next round
      // sees the committed holder and takes the conflict path. Never an endless retry.
      const round = attempt;
      report(() => deps.log.info({ ...ids, userId: snapshot.userId, version: snapshot.version, attempt: round }, 'replica write met a concurrent writer, re-reading'));
      continue;
    }
    const operation = existing === null ? 'created' : 'updated';
    report(() => applied(deps, snapshot, ids, operation, decision));
    await enqueueDeactivations(tx, deactivated([[existing, snapshot]]), now, deps);
    await handOverReleased(tx, releasedPhone(existing, next), now, deps, ids, report);
    return operation;
  }
}

export function skippedStale(deps: UserSyncDeps, snapshot: UserSnapshot, ids: EventIds, existing: ReplicaState, report = immediately): 'stale' {
  report(() => {
    deps.metrics.stale.inc();
    deps.log.info({ ...ids, userId: snapshot.userId, version: snapshot.version, replicaVersion: existing.version }, 'skipped-stale');
  });
  return 'stale';
}

/** Metrics and the seed's log lines of an applied snapshot (phones and names masked). */
export function applied(deps: UserSyncDeps, snapshot: UserSnapshot, ids: EventIds, operation: 'created' | 'updated', decision: PhoneDecision): void {
  const { log } = deps;
  const where = { ...ids, userId: snapshot.userId, version: snapshot.version };
  deps.metrics.upserted.inc({ operation });
  if (decision.conflict) {
    deps.metrics.phoneConflicts.inc();
    log.warn(
      {
        ...where,
        code: USER_SYNC_ERRORS.phoneConflict,
        phone: maskPhone(decision.conflict.phoneNumber),
        holderUserId: decision.conflict.holderUserId,
        keptPhone: maskPhone(decision.phoneNumber),
      },
      'phone-conflict',
    );
  }
  if (log.isLevelEnabled('info')) {
    log.info(
      { ...where, operation, isActive: snapshot.isActive, phone: maskPhone(decision.phoneNumber), firstName: maskName(snapshot.firstName) },
      'upserted',
    );
  }
}

/** Users an applied write turned from active to inactive (prior state, snapshot written). */
export const deactivated = (writes: Iterable<[ReplicaState | null | undefined, UserSnapshot]>): string[] =>
  [...writes].filter(([before, after]) => before?.isActive === true && !after.isActive).map(([, after]) => after.userId);

/**
 * A user turned inactive loses what is under way and the hub at once, in this transaction: their
 * calls end and their conference seats are left, with the frames the normal paths write
 * (deps.leaveMediaSessions: calls/deactivation.ts), then a UserDeactivated push intent (persist-then-push: the dispatcher
 * closes the user's connections on every replica and retries while the backplane is down). The
 * hub's periodic access recheck catches the rest, e.g. a user whose first replica row is already
 * inactive (such a user never held a call: every call and conference path needs an active caller).
 */
export async function enqueueDeactivations(tx: Db, userIds: readonly string[], now: Date, deps: Pick<UserSyncDeps, 'leaveMediaSessions' | 'push'>): Promise<void> {
  if (userIds.length === 0) return;
  await deps.leaveMediaSessions(deps.push, tx, userIds, now);
  await enqueueRealtime(deps.push, tx, userIds.map((userId) => ({ kind: 'UserDeactivated', targetKind: 'User', targetUserId: userId })), now);
}

/**
 * The phone this write let go of may be what an open conflict waits for (two users swapped
 * phones and their events arrived out of order across partitions): hand it over, and follow the
 * chain a few steps if that user lets go of another phone in turn.
 */
async function handOverReleased(tx: Db, phone: string | null, now: Date, deps: UserSyncDeps, ids: EventIds, report: Report): Promise<void> {
  for (let step = 0; phone !== null && step < 5; step++) {
    const released = phone;
    const taken = await tx
      .transaction(async (sp) => handOverReleasedPhone(sp, released, now))
      .catch((err: unknown) => {
        // A concurrent writer took the phone: it is held again, the conflict stays open.
        if (isLivePhoneViolation(err)) return null;
        throw err;
      });
    if (!taken) return;
    report(() => {
      deps.metrics.phonesHandedOver.inc();
      deps.log.info({ ...ids, userId: taken.userId, phone: maskPhone(released) }, 'phone-conflict resolved: released phone applied');
    });
    phone = taken.releasedPhone;
  }
}

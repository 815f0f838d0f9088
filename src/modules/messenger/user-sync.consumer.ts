import type { Tx } from '../../platform/db/index.ts';
import { defineConsumer, type ConsumerDefinition } from '../../platform/events/bus.ts';
import type { EventEnvelope } from '../../platform/events/envelope.ts';
import { PoisonMessageError } from '../../platform/events/errors.ts';
import { maskName, maskPhone, type Logger } from '../../platform/observability/logger.ts';
import type { Clock } from '../../platform/time.ts';
import { TOPICS } from '../../event-topics.ts';
// The producer's contract: identity's public surface is the only part of it this module reads.
import { USER_UPSERTED_EVENT } from '../identity/index.ts';
import {
  applyIfCannotCollide,
  handOverReleasedPhone,
  isLivePhoneViolation,
  readReplicaState,
  writeReplica,
  type ReplicaWrite,
} from './user-replica-sql.ts';
import type { UserSyncMetrics } from './user-sync-metrics.ts';
import {
  USER_SYNC_ERRORS,
  UserSyncRejection,
  decidePhone,
  isStale,
  mayCollide,
  readUserSnapshot,
  releasedPhone,
  type PhoneDecision,
  type ReplicaState,
  type UserSnapshot,
} from './user-sync-rules.ts';

/**
 * MessengerUserUpsertedConsumer (seed 002): keeps the messenger's user replica from
 * pin.identity.users.v1. The runner gives it one transaction per group of messages with the inbox
 * row (business key messenger-identity-user-upserted:{MessageId}) and commits the offset after it;
 * UserBlocked and other types on the topic are acknowledged and skipped by the runner. The search
 * document is not written here: the row queued in contact_search_pending is indexed after commit.
 */

export const USER_SYNC_CONSUMER = 'messenger.user-upserted';
export const USER_SYNC_GROUP = 'messenger-identity-user-sync';

export interface UserSyncDeps {
  clock: Clock;
  log: Logger;
  metrics: UserSyncMetrics;
  phoneRegion: string;
  partitionsConcurrently: number;
}

export type UserSyncOutcome = 'created' | 'updated' | 'stale';

/** Writes tried per event: the decision, again after a concurrent writer took a phone, then without a phone. */
const MAX_WRITE_ATTEMPTS = 3;

export function userSyncConsumer(deps: UserSyncDeps): ConsumerDefinition<unknown> {
  return defineConsumer<unknown>({
    name: USER_SYNC_CONSUMER,
    topic: TOPICS.identityUsers,
    groupId: USER_SYNC_GROUP,
    eventTypes: [USER_UPSERTED_EVENT],
    contractVersion: 1,
    idempotencyKey: (event) => `messenger-identity-user-upserted:${event.messageId}`,
    backoff: { initialMs: 1000, maxMs: 60_000 },
    partitionsConcurrently: deps.partitionsConcurrently,
    async handle(event, tx) {
      try {
        await applyUserUpserted(event, tx, deps);
      } catch (err) {
        throw err instanceof PoisonMessageError ? err : withoutRowValues(err);
      }
    },
  });
}

/**
 * The runner logs a failed message's error text; drizzle's text quotes the statement's parameters
 * (names, phones). Keep only what on-call needs: SQLSTATE and constraint. The cause stays attached.
 */
function withoutRowValues(err: unknown): Error {
  for (let e: unknown = err; e && typeof e === 'object'; e = (e as { cause?: unknown }).cause) {
    const pgErr = e as { code?: unknown; constraint?: unknown; severity?: unknown };
    if (typeof pgErr.code === 'string' && pgErr.severity !== undefined) {
      const constraint = typeof pgErr.constraint === 'string' ? ` on ${pgErr.constraint}` : '';
      return Object.assign(new Error(`user replica transaction failed: SQLSTATE ${pgErr.code}${constraint}`, { cause: err }), { code: pgErr.code });
    }
  }
  return err instanceof Error && !/params:/.test(err.message) ? err : new Error('user replica transaction failed', { cause: err });
}

/** One UserUpserted event against the replica, inside the consumer's transaction. */
export async function applyUserUpserted(event: EventEnvelope<unknown>, tx: Tx, deps: UserSyncDeps): Promise<UserSyncOutcome> {
  const started = performance.now();
  const { log } = deps;
  const messageId = event.messageId;
  // The trace of the event: its message id and the producer's correlation id on every line.
  const ids: EventIds = event.correlationId ? { messageId, correlationId: event.correlationId } : { messageId };
  if (log.isLevelEnabled('debug')) log.debug({ ...ids, occurredAt: event.occurredAt }, 'consumed');
  let snapshot: UserSnapshot;
  try {
    snapshot = readUserSnapshot(event.payload, deps.phoneRegion);
  } catch (err) {
    if (!(err instanceof UserSyncRejection)) throw err;
    const userId = (event.payload as { UserId?: unknown } | null)?.UserId;
    log.warn({ ...ids, userId: typeof userId === 'string' ? userId.slice(0, 64) : undefined, code: err.code, reason: err.message }, 'failed');
    throw new PoisonMessageError(err.code, err.message);
  }
  if (snapshot.truncated.length > 0) {
    log.warn({ ...ids, userId: snapshot.userId, version: snapshot.version, fields: snapshot.truncated, maxLength: 128 }, 'name longer than 128 characters truncated');
  }

  const outcome = await applySnapshot(tx, snapshot, ids, deps);
  deps.metrics.observeEvent(event.occurredAt);
  deps.metrics.consumeDuration.observe(performance.now() - started);
  return outcome;
}

interface EventIds {
  messageId: string;
  correlationId?: string;
}

async function applySnapshot(tx: Tx, snapshot: UserSnapshot, ids: EventIds, deps: UserSyncDeps): Promise<UserSyncOutcome> {
  const now = deps.clock.now();
  // Most events cannot collide on the live-phone index: one statement decides and writes them.
  const fast = await applyIfCannotCollide(tx, snapshot, now);
  if (fast.operation) {
    applied(deps, snapshot, ids, fast.operation, { phoneNumber: snapshot.phoneNumber, conflict: null });
    await handOverReleased(tx, releasedPhone(fast.existing, snapshot), now, deps, ids);
    return fast.operation;
  }
  if (isStale(fast.existing, snapshot.version)) return skippedStale(deps, snapshot, ids, fast.existing!);

  // The slow path: a taken phone, or a live row taking a new phone. Read, decide, write.
  for (let attempt = 1; ; attempt++) {
    const { existing, holders } = await readReplicaState(tx, snapshot.userId, snapshot.phoneNumber);
    if (isStale(existing, snapshot.version)) return skippedStale(deps, snapshot, ids, existing!);
    if (attempt > MAX_WRITE_ATTEMPTS + 1) throw new Error('replica write did not settle; retried with backoff');
    const decision = decidePhone(snapshot, existing, holders, attempt >= MAX_WRITE_ATTEMPTS);
    const write: ReplicaWrite = { snapshot, phoneNumber: decision.phoneNumber, conflict: decision.conflict, messageId: ids.messageId, now };
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
      deps.log.info({ ...ids, userId: snapshot.userId, version: snapshot.version, attempt }, 'replica write met a concurrent writer, re-reading');
      continue;
    }
    const operation = existing === null ? 'created' : 'updated';
    applied(deps, snapshot, ids, operation, decision);
    await handOverReleased(tx, releasedPhone(existing, next), now, deps, ids);
    return operation;
  }
}

function skippedStale(deps: UserSyncDeps, snapshot: UserSnapshot, ids: EventIds, existing: ReplicaState): 'stale' {
  deps.metrics.stale.inc();
  deps.log.info({ ...ids, userId: snapshot.userId, version: snapshot.version, replicaVersion: existing.version }, 'skipped-stale');
  return 'stale';
}

/** Metrics and the seed's log lines of an applied snapshot (phones and names masked). */
function applied(deps: UserSyncDeps, snapshot: UserSnapshot, ids: EventIds, operation: 'created' | 'updated', decision: PhoneDecision): void {
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

/**
 * The phone this write let go of may be what an open conflict waits for (two users swapped
 * phones and their events arrived out of order across partitions): hand it over, and follow the
 * chain a few steps if that user lets go of another phone in turn.
 */
async function handOverReleased(tx: Tx, phone: string | null, now: Date, deps: UserSyncDeps, ids: EventIds): Promise<void> {
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
    deps.metrics.phonesHandedOver.inc();
    deps.log.info({ ...ids, userId: taken.userId, phone: maskPhone(released) }, 'phone-conflict resolved: released phone applied');
    phone = taken.releasedPhone;
  }
}

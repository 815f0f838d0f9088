import { pgErrorOf } from '../../../platform/errors/index.ts';
import { defineConsumer, PoisonMessageError, type ConsumerDefinition } from '../../../platform/events/index.ts';
import { TOPICS } from '../../../event-topics.ts';
// The producer's contract, shared through src/contracts: the replica learns of identity only through Kafka.
import { USER_UPSERTED_EVENT } from '../../../contracts/identity-events.ts';
import { applyUserUpserted, type UserSyncDeps } from './apply.ts';
import { applyUserUpsertedBatch } from './batch.ts';
import { payloadIds } from './rules.ts';
import { MESSENGER_DEFAULTS } from '../defaults.ts';

export type { UserSyncDeps, UserSyncOutcome } from './apply.ts';

/**
 * MessengerUserUpsertedConsumer (seed 002): keeps the messenger's user replica from
 * pin.identity.users.v1. The runner gives it one transaction per group of messages with the inbox
 * row (business key messenger-identity-user-upserted:{MessageId}) and commits the offset after it;
 * UserBlocked and other types on the topic are acknowledged and skipped by the runner. The search
 * document is not written here: the row queued in contact_search_pending is indexed after commit.
 */

export const USER_SYNC_CONSUMER = 'messenger.user-upserted';
export const USER_SYNC_GROUP = 'messenger-identity-user-sync';

export function userSyncConsumer(deps: UserSyncDeps): ConsumerDefinition<unknown> {
  return defineConsumer<unknown>({
    name: USER_SYNC_CONSUMER,
    topic: TOPICS.identityUsers,
    groupId: USER_SYNC_GROUP,
    eventTypes: [USER_UPSERTED_EVENT],
    contractVersion: 1,
    idempotencyKey: (event) => `messenger-identity-user-upserted:${event.messageId}`,
    // The seed's skipped-duplicate and failed lines carry MessageId, UserId and Version.
    logFields: (event) => payloadIds(event.payload),
    // Infrastructure failures: seed 002's endless backoff 1 s → 60 s is the kernel's consumer default (EVENTS_DEFAULTS).
    partitionsConcurrently: deps.partitionsConcurrently,
    // The batch handler costs a few round trips per group whatever its size: bigger groups are
    // what carries a backlog (measured: 500 drains it about 1.5× faster than the default 100).
    maxMessagesPerTransaction: MESSENGER_DEFAULTS.userSyncMaxMessagesPerTransaction,
    async handle(event, tx) {
      try {
        await applyUserUpserted(event, tx, deps);
      } catch (err) {
        throw err instanceof PoisonMessageError ? err : withoutRowValues(err);
      }
    },
    // The common case set-based; anything unusual goes through applyUserUpserted's path.
    async handleBatch(events, tx) {
      try {
        await applyUserUpsertedBatch(events, tx, deps);
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
  const pgErr = pgErrorOf(err);
  if (pgErr) {
    const constraint = typeof pgErr.constraint === 'string' ? ` on ${pgErr.constraint}` : '';
    return Object.assign(new Error(`user replica transaction failed: SQLSTATE ${pgErr.code}${constraint}`, { cause: err }), { code: pgErr.code });
  }
  return err instanceof Error && !/params:/.test(err.message) ? err : new Error('user replica transaction failed', { cause: err });
}

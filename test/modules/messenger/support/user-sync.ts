import type pg from 'pg';
import type { Message } from 'kafkajs';
import type { IncomingMessage } from '../../../../src/platform/events/bus.ts';
import { createDb } from '../../../../src/platform/db/index.ts';
import { createLogger } from '../../../../src/platform/observability/logger.ts';
import { Registry } from '../../../../src/platform/observability/metrics.ts';
import { newId, type Clock } from '../../../../src/platform/time.ts';
import { createUserSyncMetrics } from '../../../../src/modules/messenger/user-replica/metrics.ts';
import { userSyncConsumer } from '../../../../src/modules/messenger/user-replica/user-sync.consumer.ts';
import { removeFromMediaSessions } from '../../../../src/modules/messenger/calls/deactivation.ts';
import { messengerPush } from './push.ts';

/** Helpers of the messenger user-replica tests: UserUpserted messages on the wire, replica reads, logs. */

export const T0 = new Date('2026-03-01T10:00:00Z');

export interface UpsertOpts {
  version: number;
  phone?: string;
  status?: string;
  firstName?: string;
  middleName?: string | null;
  lastName?: string;
  messageId?: string;
  contractVersion?: string;
  partition?: number;
  occurredAt?: Date;
  correlationId?: string;
}

/** A UserUpsertedKafkaEvent as identity puts it on pin.identity.users.v1 (docs/architecture.md, wire format). */
export function userUpserted(userId: string, o: UpsertOpts): Message {
  const payload = {
    UserId: userId,
    Name: { FirstName: o.firstName ?? 'Иван', MiddleName: o.middleName ?? null, LastName: o.lastName ?? 'Иванов' },
    PhoneNumber: o.phone ?? '+79990000000',
    Status: o.status ?? 'Active',
    Version: o.version,
    Type: 'Investor',
    CompanyId: null,
  };
  return rawMessage(userId, JSON.stringify(payload), { ...o, eventType: 'UserUpsertedKafkaEvent' });
}

export function rawMessage(
  userId: string,
  value: string,
  o: { messageId?: string; contractVersion?: string; partition?: number; occurredAt?: Date; eventType?: string; correlationId?: string } = {},
): Message {
  return {
    key: userId,
    value,
    ...(o.partition === undefined ? {} : { partition: o.partition }),
    headers: {
      'message-id': o.messageId ?? newId(),
      'event-type': o.eventType ?? 'UserUpsertedKafkaEvent',
      'contract-version': o.contractVersion ?? '1',
      'aggregate-type': 'User',
      'aggregate-id': userId,
      'occurred-at': (o.occurredAt ?? new Date()).toISOString(),
      ...(o.correlationId ? { 'correlation-id': o.correlationId } : {}),
    },
  };
}

/** Distinct valid Russian mobile numbers per test run, e.g. +79161234567. */
let phoneSeq = Math.floor(Math.random() * 1_000_000);
/** As the consumer runner hands a record of the users topic (partition 0) to a processor: offsets counting from 0. */
export function incomingFrom(topic: string): (m: Message) => IncomingMessage {
  let offset = 0;
  return (m) => ({
    topic,
    partition: 0,
    offset: String(offset++),
    key: m.key as string,
    value: m.value as string,
    headers: m.headers as IncomingMessage['headers'],
  });
}

export const nextPhone = (): string => `+7916${String(1_000_000 + (phoneSeq++ % 9_000_000)).padStart(7, '0')}`;

export interface ReplicaRow {
  id: string;
  first_name: string;
  middle_name: string | null;
  last_name: string;
  phone_number: string | null;
  is_active: boolean;
  identity_user_version: string;
  revision: string;
}

export async function replicaRow(pool: pg.Pool, userId: string): Promise<ReplicaRow | undefined> {
  const { rows } = await pool.query<ReplicaRow>(
    `select id, first_name, middle_name, last_name, phone_number, is_active, identity_user_version, revision
       from messenger.users where id = $1`,
    [userId],
  );
  return rows[0];
}

export async function searchDocument(pool: pg.Pool, userId: string) {
  const { rows } = await pool.query<{ phone_number: string | null; is_active: boolean; revision: string; first_name: string; last_name: string }>(
    `select phone_number, is_active, revision, first_name, last_name from messenger.contact_search_documents where user_id = $1`,
    [userId],
  );
  return rows[0];
}

export async function openConflicts(pool: pg.Pool, userId: string) {
  const { rows } = await pool.query<{ phone_number: string; holder_user_id: string | null; status: string; occurrences: number }>(
    `select phone_number, holder_user_id, status, occurrences from messenger.user_phone_conflicts where user_id = $1 and status = 'Open'`,
    [userId],
  );
  return rows;
}

export async function inboxed(pool: pg.Pool, messageId: string): Promise<boolean> {
  const { rows } = await pool.query(`select 1 from platform.inbox where idempotency_key = $1`, [`messenger-identity-user-upserted:${messageId}`]);
  return rows.length === 1;
}

/**
 * A transient infrastructure failure on replica writes matching `when` (a SQL condition on NEW):
 * a trigger raising SQLSTATE 55P03 (lock_not_available), which the consumer runner retries with
 * backoff (a data error such as a check violation would be dead-lettered instead). Returns the undo.
 */
export async function simulateReplicaWriteOutage(pool: pg.Pool, name: string, when: string): Promise<() => Promise<void>> {
  await pool.query(`create function messenger.${name}() returns trigger language plpgsql as $$
    begin raise exception 'simulated outage' using errcode = '55P03'; end $$`);
  await pool.query(`create trigger ${name} before insert or update on messenger.users for each row when (${when}) execute function messenger.${name}()`);
  return async () => {
    await pool.query(`drop trigger ${name} on messenger.users`);
    await pool.query(`drop function messenger.${name}()`);
  };
}

/**
 * Identity's UserUpserted for the user with `status`, applied by the replica consumer in one
 * transaction as the runner would: its single path, or its batch path (`batch`: Versions `version`
 * and `version + 1`).
 */
export async function applyUserStatus(
  m: { pool: pg.Pool; clock: Clock },
  user: { id: string; phone: string },
  status: string,
  version: number,
  batch = false,
): Promise<void> {
  const consumer = userSyncConsumer({
    clock: m.clock,
    log: createLogger('silent'),
    metrics: createUserSyncMetrics(new Registry(), 'test'),
    phoneRegion: 'RU',
    partitionsConcurrently: 1,
    leaveMediaSessions: removeFromMediaSessions,
    push: messengerPush(),
  });
  const event = (v: number) => ({
    messageId: newId(),
    topic: 'pin.identity.users.v1',
    key: user.id,
    eventType: 'UserUpsertedKafkaEvent',
    contractVersion: 1,
    aggregateType: 'User',
    aggregateId: user.id,
    occurredAt: T0.toISOString(),
    payload: { UserId: user.id, Name: { FirstName: 'Иван', MiddleName: null, LastName: 'Петров' }, PhoneNumber: user.phone, Status: status, Version: v },
  });
  await createDb(m.pool).transaction(async (tx) => {
    if (batch) await consumer.handleBatch!([event(version), event(version + 1)], tx);
    else await consumer.handle(event(version), tx);
  });
}

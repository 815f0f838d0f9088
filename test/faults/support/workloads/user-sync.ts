import { TOPICS } from '../../../../src/event-topics.ts';
import type { Rng } from '../seed.ts';
import { repeat, uniquePhone, type Replica, type Stack } from '../stack.ts';
import { countBy, loadProblems, missingProblem, topicEvents, type Workload } from '../workload.ts';

/**
 * Seed 002, the user-sync consumer: identity users are renamed through REST all run long (each
 * change a UserUpserted through the outbox and Kafka); at the end every UserUpserted is in the
 * consumer's inbox and every replica row is at its user's last Version.
 */

let phones = 0;

/** Identity users created through REST (each announced on pin.identity.users.v1). */
export async function createUsers(stack: Stack, front: Replica, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const res = await stack.call<{ id: string }>(front, 'POST', '/api/identity/users', {
      name: { firstName: `User${i}`, lastName: 'Fault' },
      phoneNumber: uniquePhone(++phones),
      status: 'Active',
    });
    if (res.status !== 201) throw new Error(`create user: ${res.status} ${JSON.stringify(res.body)}`);
    ids.push(res.body.id);
  }
  return ids;
}

const UPSERTED = 'UserUpsertedKafkaEvent';
const INBOX_PREFIX = 'messenger-identity-user-upserted:';

export function userSyncWorkload(stack: Stack, front: Replica, rng: Rng, userIds: readonly string[]): Workload {
  const pool = stack.database.pool;
  let renames = 0;
  const load = repeat(500, async () => {
    const id = rng.pick(userIds);
    const res = await stack.call(front, 'PATCH', `/api/identity/users/${id}`, { name: { firstName: `Renamed${++renames}`, lastName: 'Fault' } });
    if (res.status !== 200) throw new Error(`rename: ${res.status} ${JSON.stringify(res.body)}`);
  });

  /** Users whose replica row is missing or behind identity's Version. */
  const behind = async () =>
    (
      await pool.query<{ id: string }>(
        `select u.id from identity.users u left join messenger.users r on r.id = u.id
         where r.id is null or r.identity_user_version <> u.version`,
      )
    ).rows.map((r) => r.id);
  /** UserUpserted outbox rows the consumer has not recorded as handled. */
  const unhandled = async () =>
    (
      await pool.query<{ id: string }>(
        `select o.id from platform.outbox o
         where o.event_type = $1 and not exists (select 1 from platform.inbox i where i.idempotency_key = $2 || o.id::text)`,
        [UPSERTED, INBOX_PREFIX],
      )
    ).rows.map((r) => r.id);

  return {
    fault: 'sigkill-user-sync-consumer',
    progress: async () =>
      (await pool.query<{ n: number }>(`select count(*)::int as n from platform.inbox where idempotency_key like $1`, [`${INBOX_PREFIX}%`])).rows[0]!.n,
    stop: () => load.stop(),
    drained: async () => (await behind()).length === 0 && (await unhandled()).length === 0,
    async verdict(run) {
      const expected = (await pool.query<{ n: number }>(`select count(*)::int as n from platform.outbox where event_type = $1`, [UPSERTED])).rows[0]!.n;
      const missing = await unhandled();
      const stale = await behind();
      const events = (await topicEvents(stack, TOPICS.identityUsers, expected)).filter((e) => e.eventType === UPSERTED);
      const copies = [...countBy(events, (e) => e.messageId).values()].reduce((n, c) => n + c - 1, 0);
      return {
        expected,
        seen: expected - missing.length,
        duplicated: copies,
        problems: [
          ...missingProblem('UserUpserted events never applied (no inbox row)', missing),
          ...missingProblem('replica rows at the last Version', stale),
          ...loadProblems('rename', load, run),
        ],
      };
    },
  };
}

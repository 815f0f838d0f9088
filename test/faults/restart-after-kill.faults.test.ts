import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import assert from 'node:assert/strict';
import { TOPICS } from '../../src/event-topics.ts';
import { createRng, faultSeed, printSummary } from './support/seed.ts';
import { createStack } from './support/stack.ts';
import { createUsers } from './support/workloads/user-sync.ts';
import { topicEvents } from './support/workload.ts';
import { waitFor } from '../support/wait.ts';

/**
 * A replica restarted after a SIGKILL: its consumers cannot join their groups until the dead
 * member's session expires (KERNEL_TUNING.kafkaConsumerSessionTimeoutMs, 30 s in production, 60 s here). Its
 * jobs must not wait for that: the outbox publisher (and realtime dispatch, and every other job)
 * start as soon as the producer is connected. Before the fix the job runner started only after
 * every consumer had joined, so each crash stopped event publishing for up to 30 s. The kill comes
 * at a seeded moment after the first replica joined (FAULT_SEED replays it).
 */

// Longer than production's 30 s: on a loaded machine the restart alone took past 30 s once, so the
// dead member had left before the check; the passing run ends at the publish, so this costs nothing.
const SESSION_TIMEOUT_MS = 60_000;
const GROUP = 'messenger-identity-user-sync';

test('after a SIGKILL the restarted replica publishes outbox rows while its consumers still wait to join', { timeout: 180_000 }, async () => {
  const rng = createRng(faultSeed());
  const stack = await createStack();
  const tuning = { kernel: { kafkaConsumerSessionTimeoutMs: SESSION_TIMEOUT_MS } };
  const members = async () => (await stack.kafka.admin.describeGroups([stack.kafka.topic(GROUP)])).groups[0]?.members.map((m) => m.memberId) ?? [];

  const first = await stack.start('first', { tuning });
  await waitFor('the first replica to join the user-sync group', async () => (await members()).length === 1, 60_000);
  const [deadMember] = await members();
  await sleep(rng.int(0, 3000));
  await first.kill();

  const restarted = await stack.start('restarted', { tuning });
  const killedAt = Date.now();
  const [userId] = await createUsers(stack, restarted, 1);
  const { rows } = await stack.database.pool.query<{ id: string }>(`select id::text from platform.outbox where aggregate_id = $1`, [userId]);
  const copies = async () => (await topicEvents(stack, TOPICS.identityUsers)).filter((e) => e.messageId === rows[0]!.id).length;
  let seen = 0;
  await waitFor('the UserUpserted of a user created after the restart to reach Kafka', async () => (seen = await copies()) > 0, SESSION_TIMEOUT_MS / 2).finally(
    () => printSummary({ fault: 'restart-after-kill', seed: rng.seed, kills: 1, expected: 1, seen: Math.min(seen, 1), duplicated: Math.max(0, seen - 1) }),
  );
  assert.ok(Date.now() - killedAt < SESSION_TIMEOUT_MS, 'published before the dead member could have left the group');
  // The scenario was real: the dead member still held the group, so the new one had not joined yet.
  assert.ok((await members()).includes(deadMember!), 'the killed replica is still a member of the group');
});

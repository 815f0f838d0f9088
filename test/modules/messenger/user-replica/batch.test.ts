import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Message } from 'kafkajs';
import { createTestDatabase, type TestDatabase } from '../../../support/db.ts';
import { Registry } from '../../../../src/platform/observability/metrics.ts';
import { createLogger } from '../../../../src/platform/observability/logger.ts';
import { ManualClock, newId } from '../../../../src/platform/time.ts';
import type { OutgoingMessage } from '../../../../src/platform/events/bus.ts';
import { consumerMetrics } from '../../../../src/platform/events/consumer-metrics.ts';
import { createMessageProcessor, resolveConsumer } from '../../../../src/platform/events/consumer-runner.ts';
import { USER_SYNC_CONSUMER, userSyncConsumer } from '../../../../src/modules/messenger/user-replica/user-sync.consumer.ts';
import { createUserSyncMetrics } from '../../../../src/modules/messenger/user-replica/metrics.ts';
import { incomingFrom, nextPhone, rawMessage, simulateReplicaWriteOutage, userUpserted } from '../support/user-sync.ts';
import { logCapture } from '../../../support/logs.ts';
import { metricValue } from '../../../support/metrics.ts';
import { removeFromMediaSessions } from '../../../../src/modules/messenger/calls/deactivation.ts';
import { messengerPush } from '../support/push.ts';

/**
 * The batch path of the user replica consumer against the single path: the same messages, fed
 * through the real consumer runner into two databases — one consumer with its batch handler, one
 * without — must leave the same replica rows, conflicts, search queue and inbox, the same
 * outcomes, metrics, log lines and dead letters. Groups mix creates, updates, stale and duplicate
 * deliveries, repeated users, phone conflicts and hand-overs; others make the batch path fall back.
 */

const TOPIC = 'pin.identity.users.v1';
const clock = new ManualClock('2026-03-01T10:00:00Z');

function harness(database: TestDatabase, withBatch: boolean) {
  const registry = new Registry();
  const logs = logCapture();
  const log = createLogger('debug', logs.stream);
  const definition = userSyncConsumer({
    clock,
    log,
    metrics: createUserSyncMetrics(registry, USER_SYNC_CONSUMER),
    phoneRegion: 'RU',
    partitionsConcurrently: 1,
    leaveMediaSessions: removeFromMediaSessions,
    push: messengerPush(),
  });
  if (!withBatch) delete definition.handleBatch;
  const deadLetters: OutgoingMessage[] = [];
  const processor = createMessageProcessor(resolveConsumer(definition), {
    db: database.db,
    log,
    metrics: consumerMetrics(registry),
    publish: async (m) => void deadLetters.push(...m),
  });
  return { database, registry, logs, deadLetters, processor };
}
type Harness = ReturnType<typeof harness>;

const single = harness(await createTestDatabase(), false);
const batched = harness(await createTestDatabase(), true);

const incoming = incomingFrom(TOPIC);

/** The same group through both consumers. */
async function processBoth(messages: Message[]) {
  const group = messages.map(incoming);
  const [a, b] = [await single.processor.processBatch(group), await batched.processor.processBatch(group)];
  const summary = (r: typeof a) => ({ done: r.done, error: r.error === undefined ? undefined : String(r.error) });
  assert.deepEqual(summary(b), summary(a), 'same result of the group');
  return summary(a);
}

/** Everything the consumer leaves behind that must not depend on the path. */
async function state(h: Harness) {
  const q = async (text: string) => (await h.database.pool.query(text)).rows;
  const metrics: Record<string, number> = {};
  const series: [string, Record<string, string>[]][] = [
    ['consumer_messages_total', ['handled', 'duplicate', 'skipped', 'dead_lettered'].map((outcome) => ({ outcome }))],
    ['consumer_contract_version_mismatch_total', [{}]],
    ['messenger_users_upserted_total', [{ operation: 'created' }, { operation: 'updated' }]],
    ['messenger_identity_stale_events_total', [{}]],
    ['messenger_user_phone_conflicts_total', [{}]],
    ['messenger_user_phone_conflicts_resolved_total', [{}]],
    ['messenger_user_sync_dlq_total', [{ code: 'MSG_USER_SYNC_INVALID_PHONE' }, { code: 'MSG_USER_SYNC_INVALID_PAYLOAD' }]],
    ['messenger_user_sync_contract_mismatch_total', [{}]],
  ];
  for (const [name, labels] of series) {
    for (const l of labels) metrics[`${name}${JSON.stringify(l)}`] = await metricValue(h.registry, name, l);
  }
  metrics.consume_duration_count = await metricValue(h.registry, 'messenger_user_sync_consume_duration_ms', {}, 'messenger_user_sync_consume_duration_ms_count');
  return {
    users: await q(`select id, first_name, middle_name, last_name, phone_number, is_active, identity_user_version, revision, created_at, updated_at
                      from messenger.users order by id`),
    conflicts: await q(`select user_id, phone_number, holder_user_id, identity_user_version, message_id, occurrences, status, resolution,
                               detected_at, last_seen_at, resolved_at
                          from messenger.user_phone_conflicts order by user_id, phone_number, detected_at`),
    pending: await q(`select user_id, revision, attempts, enqueued_at, next_attempt_at from messenger.contact_search_pending order by user_id`),
    inbox: await q(`select idempotency_key, consumer from platform.inbox order by idempotency_key`),
    metrics,
    // The consumer's lines in order, without what differs by process and clock.
    logs: h.logs
      .lines()
      .filter((l) => l.msg !== 'batch handler failed, group handled message by message')
      .map(({ time: _t, pid: _p, hostname: _h, ...line }) => line),
    deadLetters: h.deadLetters.map((m) => ({ topic: m.topic, key: m.key, value: m.value, headers: m.headers })),
  };
}

async function assertSameState() {
  const [a, b] = [await state(single), await state(batched)];
  assert.deepEqual(b.users, a.users, 'replica rows');
  assert.deepEqual(b.conflicts, a.conflicts, 'phone conflicts');
  assert.deepEqual(b.pending, a.pending, 'search queue');
  assert.deepEqual(b.inbox, a.inbox, 'inbox');
  assert.deepEqual(b.metrics, a.metrics, 'metrics');
  assert.deepEqual(b.logs, a.logs, 'log lines');
  assert.deepEqual(b.deadLetters, a.deadLetters, 'dead letters');
  return a;
}

const batchCalls = (h: Harness) => metricValue(h.registry, 'consumer_handle_duration_seconds', {}, 'consumer_handle_duration_seconds_count');
const fallbacks = (h: Harness) => metricValue(h.registry, 'consumer_batch_fallbacks_total');

describe('user replica: the batch path leaves exactly what the single path leaves', () => {
  // Users and phones shared by the tests below, in order.
  const [holder, leaver, claimant, renamed, blocked] = [newId(), newId(), newId(), newId(), newId()];
  const [heldPhone, leavingPhone, claimantPhone, renamedPhone, blockedPhone] = [nextPhone(), nextPhone(), nextPhone(), nextPhone(), nextPhone()];

  test('setup: live holders, a blocked user and an open conflict waiting for a phone', async () => {
    await processBoth([
      userUpserted(holder, { version: 1, phone: heldPhone }),
      userUpserted(leaver, { version: 1, phone: leavingPhone }),
      userUpserted(claimant, { version: 1, phone: claimantPhone }),
      userUpserted(renamed, { version: 1, phone: renamedPhone }),
      userUpserted(blocked, { version: 1, phone: blockedPhone, status: 'Blocked' }),
      // The claimant asks for the leaver's phone: a conflict, open until the leaver lets it go.
      userUpserted(claimant, { version: 2, phone: leavingPhone }),
    ]);
    const s = await assertSameState();
    assert.equal(s.conflicts.filter((c) => c.status === 'Open').length, 1);
  });

  test('a group mixing creates, updates, stale, duplicates, repeated users, conflicts and a hand-over', async () => {
    const [a, b, c, d, e, f] = [newId(), newId(), newId(), newId(), newId(), newId()];
    const [phoneA, phoneA2, phoneC, phoneD, sharedPhone, newLeaverPhone] = [nextPhone(), nextPhone(), nextPhone(), nextPhone(), nextPhone(), nextPhone()];
    const createA = userUpserted(a, { version: 1, phone: phoneA, firstName: 'Анна' });
    const callsBefore = await batchCalls(batched);

    const result = await processBoth([
      createA,
      userUpserted(renamed, { version: 2, phone: renamedPhone, firstName: 'Переименован', middleName: 'Отчество' }),
      userUpserted(renamed, { version: 1, phone: nextPhone(), firstName: 'Устаревшее' }), // stale: older
      { ...createA }, // redelivered message id: duplicate
      rawMessage(a, JSON.stringify({ UserId: a, Version: 9 }), { eventType: 'UserBlockedKafkaEvent' }), // foreign type: skipped
      userUpserted(b, { version: 1, phone: heldPhone, firstName: 'Претендент' }), // conflict with the holder: created without a phone
      userUpserted(a, { version: 2, phone: phoneA, lastName: '' }), // the same user again
      userUpserted(a, { version: 3, phone: phoneA2 }), // and again, with a phone change
      userUpserted(leaver, { version: 2, phone: newLeaverPhone }), // lets go of the phone the claimant waits for: hand-over
      userUpserted(c, { version: 1, phone: phoneC, contractVersion: '2' }), // another contract version: processed
      userUpserted(c, { version: 2, phone: phoneC, status: 'Archived' }),
      userUpserted(d, { version: 1, phone: phoneD, firstName: 'Ж'.repeat(150) }), // truncated with a warning
      userUpserted(blocked, { version: 2, phone: blockedPhone, status: 'Active' }), // back to live with its phone
      userUpserted(e, { version: 1, phone: sharedPhone }),
      userUpserted(f, { version: 1, phone: sharedPhone }), // the phone e just took: a conflict
      userUpserted(renamed, { version: 2, phone: renamedPhone, firstName: 'Тот же' }), // stale: equal version
    ]);

    assert.deepEqual(result, { done: 16, error: undefined });
    assert.equal(await batchCalls(batched), callsBefore + 1, 'the group went through the batch handler in one call');
    assert.equal(await fallbacks(batched), 0, 'without falling back');
    const s = await assertSameState();
    const user = (id: string) => s.users.find((u) => u.id === id)!;
    assert.equal(user(claimant).phone_number, leavingPhone, 'the released phone was handed over');
    assert.equal(user(b).phone_number, null, 'a first appearance with a taken phone has none');
    assert.equal(user(f).phone_number, null);
    assert.deepEqual([user(a).phone_number, user(a).identity_user_version, user(a).revision], [phoneA2, '3', '3']);
    assert.equal(s.metrics['messenger_identity_stale_events_total{}'], 2);
    assert.equal(s.metrics['messenger_user_phone_conflicts_total{}'], 3);
    assert.equal(s.metrics['messenger_user_phone_conflicts_resolved_total{}'], 1);
    assert.ok(s.logs.some((l) => l.msg === 'phone-conflict' && l.userId === f));
    assert.ok(s.logs.some((l) => String(l.msg).includes('truncated') && l.userId === d));
  });

  test('an invalid phone in a group: the batch path falls back, the message is dead-lettered, the others applied', async () => {
    const [g, h] = [newId(), newId()];
    const before = await fallbacks(batched);
    const result = await processBoth([
      userUpserted(g, { version: 1, phone: nextPhone() }),
      userUpserted(h, { version: 1, phone: '+7999' }),
      rawMessage(h, JSON.stringify({ UserId: h, Version: 1 })), // missing fields
      userUpserted(g, { version: 2, phone: nextPhone() }),
      userUpserted(h, { version: 2, phone: nextPhone() }),
    ]);
    assert.deepEqual(result, { done: 5, error: undefined });
    // Once per poison message: after a dead letter the rest of the group tries the batch path again.
    assert.equal(await fallbacks(batched), before + 2);
    const s = await assertSameState();
    assert.deepEqual(
      s.deadLetters.slice(-2).map((m) => m.headers['dlq-code']),
      ['MSG_USER_SYNC_INVALID_PHONE', 'MSG_USER_SYNC_INVALID_PAYLOAD'],
    );
    assert.equal(s.users.find((u) => u.id === h)?.identity_user_version, '2');
  });

  test('a statement failing in the batch path falls back; the failing message is held for retry, the ones before it commit', async () => {
    const [k, l, m] = [newId(), newId(), newId()];
    const group = [
      userUpserted(k, { version: 1, phone: nextPhone() }),
      userUpserted(l, { version: 1, phone: nextPhone(), firstName: 'Сбой' }),
      userUpserted(m, { version: 1, phone: nextPhone() }),
    ];
    const before = await fallbacks(batched);
    // A transient infrastructure failure both paths meet on the write.
    const undo = await Promise.all([single, batched].map((h) => simulateReplicaWriteOutage(h.database.pool, 'test_fail', `new.first_name = 'Сбой'`)));
    try {
      const result = await processBoth(group);
      assert.equal(result.done, 1);
      assert.match(String(result.error), /SQLSTATE 55P03/);
      assert.equal(await fallbacks(batched), before + 1);
      const s = await assertSameState();
      assert.ok(s.users.some((u) => u.id === k));
      assert.ok(!s.users.some((u) => u.id === l));
    } finally {
      await Promise.all(undo.map((u) => u()));
    }
    // The retry from the failed message on goes through.
    assert.deepEqual(await processBoth(group.slice(1)), { done: 2, error: undefined });
    await assertSameState();
  });

  test('a row changed by a concurrent writer between the read and the write: the batch is redone message by message', async () => {
    const [n, o] = [newId(), newId()];
    await processBoth([userUpserted(n, { version: 1, phone: nextPhone() }), userUpserted(o, { version: 1, phone: nextPhone() })]);
    // The concurrent writer: a hand-over-like change of n's row that bumps its revision, not its version.
    const bump = `update messenger.users set revision = revision + 1 where id = '${n}'`;
    const before = await fallbacks(batched);
    // A lock held on n's row: the batch reads the old revision, then the change commits while the write waits.
    const result = await batchBehindOpenWrite(batched, bump, [], [
      userUpserted(o, { version: 2, phone: nextPhone() }),
      userUpserted(n, { version: 2, phone: nextPhone(), firstName: 'После' }),
    ]);
    assert.deepEqual(result, { done: 2 });
    assert.equal(await fallbacks(batched), before + 1);
    const { rows } = await batched.database.pool.query(`select first_name, identity_user_version, revision from messenger.users where id = $1`, [n]);
    assert.deepEqual(rows[0], { first_name: 'После', identity_user_version: '2', revision: '3' });
  });

  test('a user a concurrent writer creates between the read and the write: the batch is redone message by message', async () => {
    const [p, q] = [newId(), newId()];
    const before = await fallbacks(batched);
    // The concurrent writer's row is uncommitted when the batch reads, so the batch plans a create of p.
    const result = await batchBehindOpenWrite(
      batched,
      `insert into messenger.users (id, first_name, last_name, phone_number, is_active, identity_user_version, revision, created_at, updated_at)
       values ($1, 'Раньше', 'Тестов', $2, true, 1, 1, now(), now())`,
      [p, nextPhone()],
      [userUpserted(q, { version: 1, phone: nextPhone() }), userUpserted(p, { version: 2, phone: nextPhone(), firstName: 'Позже' })],
    );
    assert.deepEqual(result, { done: 2 });
    assert.equal(await fallbacks(batched), before + 1);
    const row = async (id: string) =>
      (await batched.database.pool.query(`select first_name, identity_user_version from messenger.users where id = $1`, [id])).rows[0];
    assert.deepEqual(await row(p), { first_name: 'Позже', identity_user_version: '2' }, 'the snapshot applied over the concurrent create');
    assert.deepEqual(await row(q), { first_name: 'Иван', identity_user_version: '1' });
  });
});

/**
 * A concurrent writer: `sql` runs in an open transaction, the batch of `events` starts and reads, and
 * the writer commits once the batch's write waits on its lock. Returns the batch's result.
 */
async function batchBehindOpenWrite(
  world: typeof batched,
  sql: string,
  params: unknown[],
  events: Parameters<typeof incoming>[0][],
): Promise<Awaited<ReturnType<typeof world.processor.processBatch>>> {
  const client = await world.database.pool.connect();
  try {
    await client.query('begin');
    await client.query(sql, params);
    const pending = world.processor.processBatch(events.map(incoming));
    await waitForLockWaiter(world.database);
    await client.query('commit');
    return await pending;
  } finally {
    client.release();
  }
}

/** Polls until a backend of this database waits on a lock (the batch write behind the open transaction). */
async function waitForLockWaiter(database: TestDatabase): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const { rows } = await database.pool.query(
      `select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
    );
    if (rows[0].n > 0) return;
    if (Date.now() > deadline) throw new Error('no backend waited on the lock');
    await new Promise((r) => setTimeout(r, 20));
  }
}

import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp } from '../../../support/app.ts';
import { createTestKafka } from '../../../support/kafka.ts';
import { newId } from '../../../../src/platform/time.ts';
import { TOPICS } from '../../../../src/event-topics.ts';
import { OUTBOX_PUBLISHER_JOB } from '../../../../src/platform/outbox/index.ts';
import { messengerModule } from '../../../../src/modules/messenger/index.ts';
import { USER_SYNC_CONSUMER } from '../../../../src/modules/messenger/user-replica/user-sync.consumer.ts';
import { requireAddressableUser } from '../../../../src/modules/messenger/user-replica/replica-reads.ts';
import { inboxed, nextPhone, openConflicts, rawMessage, replicaRow, searchDocument, userUpserted } from '../support/user-sync.ts';
import { logCapture } from '../../../support/logs.ts';
import { metricValue } from '../../../support/metrics.ts';
import { waitFor } from '../../../support/wait.ts';

/**
 * MessengerUserUpsertedConsumer on the real broker, one test per acceptance row of seed 002 (the
 * index-failure row runs against a stopped Elasticsearch in contact-search.es.test.ts).
 */

const k = await createTestKafka();
const logs = logCapture();
const { app, database, token } = await buildTestApp(
  {
    KAFKA_BROKERS: k.brokers.join(','),
    KAFKA_TOPIC_PREFIX: k.prefix,
    JOBS_ENABLED: 'true',
  },
  { modules: [messengerModule({ contactSearchIndexIntervalMs: 200 })], logDestination: logs.stream, logLevel: 'info' },
);
await app.platform.startBackground();
const pool = database.pool;
const topic = k.topic(TOPICS.identityUsers);
const registry = app.platform.registry;
const metric = (name: string, labels: Record<string, string> = {}) => metricValue(registry, name, labels);

const viewer = await token();
const search = (phone: string) =>
  app.inject({ method: 'GET', url: `/api/messenger/contacts/search?phone=${encodeURIComponent(phone)}`, headers: { authorization: `Bearer ${viewer}` } });

const versionOf = async (userId: string) => Number((await replicaRow(pool, userId))?.identity_user_version ?? 0);
const untilVersion = (userId: string, v: number) => waitFor(`${userId} at version ${v}`, async () => (await versionOf(userId)) === v);
const untilInboxed = (messageId: string) => waitFor(`message ${messageId} handled`, () => inboxed(pool, messageId));
const untilIndexed = (userId: string, revision: number) =>
  waitFor(`${userId} indexed at revision ${revision}`, async () => Number((await searchDocument(pool, userId))?.revision ?? 0) === revision);

describe('MessengerUserUpsertedConsumer (real Kafka)', () => {
  after(() => app.close());

  test('happy create: the replica row is created at Version N and its search document indexed', async () => {
    const userId = newId();
    const phone = nextPhone();
    const msg = userUpserted(userId, { version: 4, phone, firstName: 'Анна', middleName: 'Сергеевна', lastName: 'Петрова' });
    await k.produce(topic, [msg]);
    await untilVersion(userId, 4);
    const row = await replicaRow(pool, userId);
    assert.deepEqual(
      { ...row, id: undefined },
      { id: undefined, first_name: 'Анна', middle_name: 'Сергеевна', last_name: 'Петрова', phone_number: phone, is_active: true, identity_user_version: '4', revision: '1' },
    );
    // The business idempotency key is in the inbox, written with the replica.
    assert.equal(await inboxed(pool, String(msg.headers!['message-id'])), true);
    await untilIndexed(userId, 1);
    const found = await search(phone);
    assert.equal(found.statusCode, 200);
    assert.equal(found.json().userId, userId);
    assert.ok((await metric('messenger_users_upserted_total', { operation: 'created' })) >= 1);
  });

  test('happy update: Version N+1 updates the fields and reindexes', async () => {
    const userId = newId();
    const [p1, p2] = [nextPhone(), nextPhone()];
    await k.produce(topic, [userUpserted(userId, { version: 1, phone: p1 }), userUpserted(userId, { version: 2, phone: p2, firstName: 'Пётр', lastName: '' })]);
    await untilVersion(userId, 2);
    const row = await replicaRow(pool, userId);
    assert.equal(row?.first_name, 'Пётр');
    assert.equal(row?.last_name, ''); // an empty LastName is accepted
    assert.equal(row?.phone_number, p2);
    await untilIndexed(userId, 2);
    assert.equal((await search(p2)).json().userId, userId);
    assert.equal((await search(p1)).json().code, 'MSG_CONTACT_USER_NOT_FOUND');
  });

  test('stale event: Version <= N leaves the replica unchanged (skipped-stale) and is counted', async () => {
    const userId = newId();
    const phone = nextPhone();
    await k.produce(topic, [userUpserted(userId, { version: 5, phone, firstName: 'Новый' })]);
    await untilVersion(userId, 5);
    const staleBefore = await metric('messenger_identity_stale_events_total');
    const older = userUpserted(userId, { version: 4, phone: nextPhone(), firstName: 'Старый' });
    const same = userUpserted(userId, { version: 5, phone: nextPhone(), firstName: 'Тот же' });
    await k.produce(topic, [older, same]);
    await untilInboxed(String(same.headers!['message-id']));
    const row = await replicaRow(pool, userId);
    assert.equal(row?.first_name, 'Новый');
    assert.equal(row?.phone_number, phone);
    assert.equal(row?.revision, '1');
    assert.equal((await metric('messenger_identity_stale_events_total')) - staleBefore, 2);
    assert.ok(logs.lines().some((l) => l.msg === 'skipped-stale' && l.userId === userId && l.version === 4 && l.messageId === older.headers!['message-id']));
  });

  test('duplicate: a redelivered MessageId is a no-op (skipped-duplicate) and acknowledged', async () => {
    const userId = newId();
    const first = userUpserted(userId, { version: 1, phone: nextPhone(), firstName: 'Первый' });
    await k.produce(topic, [first]);
    await untilVersion(userId, 1);
    const dupBefore = await metric('consumer_messages_total', { consumer: USER_SYNC_CONSUMER, outcome: 'duplicate' });
    // Same message id, even with another body: the inbox key decides, the handler never runs.
    const redelivered = { ...userUpserted(userId, { version: 9, firstName: 'Дубль' }), headers: first.headers };
    const marker = userUpserted(userId, { version: 2, phone: nextPhone(), firstName: 'Второй' });
    await k.produce(topic, [redelivered, marker]);
    await untilVersion(userId, 2);
    // Counted once the group's commit has returned: the replica row can be read a moment before.
    const duplicates = () => metric('consumer_messages_total', { consumer: USER_SYNC_CONSUMER, outcome: 'duplicate' });
    await waitFor('the redelivery counted as a duplicate', async () => (await duplicates()) > dupBefore);
    assert.equal(await duplicates(), dupBefore + 1);
    assert.equal((await replicaRow(pool, userId))?.first_name, 'Второй');
  });

  test('status change: Blocked, Archived and unknown statuses make the user inactive (fail closed) and not addressable', async () => {
    for (const [i, status] of ['Blocked', 'Archived', 'Suspended'].entries()) {
      const userId = newId();
      const phone = nextPhone();
      await k.produce(topic, [userUpserted(userId, { version: 1, phone, status: 'Invited' }), userUpserted(userId, { version: 2, phone, status })]);
      await untilVersion(userId, 2);
      assert.equal((await replicaRow(pool, userId))?.is_active, false, status);
      await untilIndexed(userId, 2);
      const res = await search(phone);
      assert.equal(res.statusCode, 404, `${status} (${i})`);
      assert.equal(res.json().code, 'MSG_CONTACT_USER_NOT_FOUND');
      // Not visible answers exactly as no such user: the search tells nobody the number is registered.
      const nobody = await search(nextPhone());
      assert.deepEqual([res.statusCode, res.json()], [nobody.statusCode, nobody.json()]);
      await assert.rejects(requireAddressableUser(database.db, userId), { code: 'MSG_USER_NOT_FOUND' });
    }
  });

  test('phone conflict: names/IsActive/Version applied, phone kept, MSG_USER_PHONE_CONFLICT recorded for support, not dead-lettered', async () => {
    const [holder, claimant, newcomer] = [newId(), newId(), newId()];
    const [taken, own] = [nextPhone(), nextPhone()];
    await k.produce(topic, [userUpserted(holder, { version: 1, phone: taken }), userUpserted(claimant, { version: 1, phone: own })]);
    await Promise.all([untilVersion(holder, 1), untilVersion(claimant, 1)]);
    const conflictsBefore = await metric('messenger_user_phone_conflicts_total');

    // One after the other: the older claim is the one a released phone goes to.
    await k.produce(topic, [userUpserted(claimant, { version: 2, phone: taken, firstName: 'Сменил', status: 'Active' })]);
    await untilVersion(claimant, 2);
    await k.produce(topic, [userUpserted(newcomer, { version: 1, phone: taken, firstName: 'Новичок' })]);
    await untilVersion(newcomer, 1);
    const c = await replicaRow(pool, claimant);
    assert.equal(c?.first_name, 'Сменил');
    assert.equal(c?.phone_number, own, 'an existing row keeps its phone');
    const n = await replicaRow(pool, newcomer);
    assert.equal(n?.first_name, 'Новичок');
    assert.equal(n?.phone_number, null, 'a first appearance with a taken phone has none');
    assert.equal((await replicaRow(pool, holder))?.phone_number, taken);

    assert.deepEqual(await openConflicts(pool, claimant), [{ phone_number: taken, holder_user_id: holder, status: 'Open', occurrences: 1 }]);
    assert.equal((await openConflicts(pool, newcomer)).length, 1);
    assert.equal((await metric('messenger_user_phone_conflicts_total')) - conflictsBefore, 2);
    assert.equal(await metric('consumer_dlq_total', { consumer: USER_SYNC_CONSUMER, code: 'MSG_USER_PHONE_CONFLICT' }), 0);
    const line = logs.lines().find((l) => l.msg === 'phone-conflict' && l.userId === claimant);
    assert.equal(line?.code, 'MSG_USER_PHONE_CONFLICT');
    assert.equal(line?.phone, `+7***${taken.slice(-4)}`);

    const admin = await token({ admin: true });
    const listed = await app.inject({ method: 'GET', url: '/api/messenger/admin/user-phone-conflicts', headers: { authorization: `Bearer ${admin}` } });
    assert.equal(listed.statusCode, 200);
    const mine = (listed.json().items as { userId: string; holderUserId: string; status: string }[]).filter((i) => i.userId === claimant);
    assert.deepEqual(mine.map((i) => [i.holderUserId, i.status]), [[holder, 'Open']]);
    const forbidden = await app.inject({ method: 'GET', url: '/api/messenger/admin/user-phone-conflicts', headers: { authorization: `Bearer ${viewer}` } });
    assert.equal(forbidden.statusCode, 403);

    // The holder lets the phone go: the oldest open claim still wanting it gets it (no DLQ, no support needed).
    await k.produce(topic, [userUpserted(holder, { version: 2, phone: nextPhone() })]);
    await untilVersion(holder, 2);
    await waitFor('released phone handed over', async () => (await replicaRow(pool, claimant))?.phone_number === taken);
    assert.deepEqual(await openConflicts(pool, claimant), []);
    assert.equal((await openConflicts(pool, newcomer)).length, 1, 'the later claimant still waits');
  });

  test('invalid phone: MSG_USER_SYNC_INVALID_PHONE goes to the DLQ with an alert metric, no retry, and the partition moves on', async () => {
    const userId = newId();
    const bad = userUpserted(userId, { version: 1, phone: '+7999' });
    const next = userUpserted(userId, { version: 2, phone: nextPhone() });
    const retriedBefore = await metric('consumer_messages_total', { consumer: USER_SYNC_CONSUMER, outcome: 'retried' });
    await k.produce(topic, [bad, next]);
    await untilVersion(userId, 2);
    const dlq = (await k.readTopic(`${topic}.dlq`, { atLeast: 1 })).filter((m) => m.headers['message-id'] === bad.headers!['message-id']);
    assert.equal(dlq.length, 1);
    assert.equal(dlq[0]!.headers['dlq-code'], 'MSG_USER_SYNC_INVALID_PHONE');
    assert.ok(!dlq[0]!.headers['dlq-reason']!.includes('+7999'), 'no phone in the reason header');
    assert.ok((await metric('messenger_user_sync_dlq_total', { code: 'MSG_USER_SYNC_INVALID_PHONE' })) >= 1);
    assert.equal(await metric('consumer_messages_total', { consumer: USER_SYNC_CONSUMER, outcome: 'retried' }), retriedBefore);
  });

  test('malformed messages (not JSON, missing fields) are dead-lettered and the partition continues', async () => {
    const userId = newId();
    const notJson = rawMessage(userId, '{not json');
    const missing = rawMessage(userId, JSON.stringify({ UserId: userId, Version: 1 }));
    const good = userUpserted(userId, { version: 3, phone: nextPhone() });
    await k.produce(topic, [notJson, missing, good]);
    await untilVersion(userId, 3);
    const dlq = await k.readTopic(`${topic}.dlq`, { atLeast: 2 });
    const code = (m: typeof notJson) => dlq.find((d) => d.headers['message-id'] === m.headers!['message-id'])?.headers['dlq-code'];
    assert.equal(code(notJson), 'ENVELOPE_INVALID_JSON');
    assert.equal(code(missing), 'MSG_USER_SYNC_INVALID_PAYLOAD');
    assert.ok((await metric('messenger_user_sync_dlq_total', { code: 'ENVELOPE_INVALID_JSON' })) >= 1, 'the seed metric counts unreadable messages too');
  });

  test('other event types on the topic (UserBlocked) are acknowledged and skipped', async () => {
    const userId = newId();
    const blocked = rawMessage(userId, JSON.stringify({ UserId: userId, Version: 7, BlockedAt: new Date().toISOString() }), {
      eventType: 'UserBlockedKafkaEvent',
    });
    const skippedBefore = await metric('consumer_messages_total', { consumer: USER_SYNC_CONSUMER, outcome: 'skipped' });
    await k.produce(topic, [blocked, userUpserted(userId, { version: 1, phone: nextPhone() })]);
    await untilVersion(userId, 1);
    assert.equal(await metric('consumer_messages_total', { consumer: USER_SYNC_CONSUMER, outcome: 'skipped' }), skippedBefore + 1);
  });

  test('another ContractVersion: warn-and-proceed, counted by messenger_user_sync_contract_mismatch_total', async () => {
    const userId = newId();
    const before = await metric('messenger_user_sync_contract_mismatch_total');
    await k.produce(topic, [userUpserted(userId, { version: 1, phone: nextPhone(), contractVersion: '2' })]);
    await untilVersion(userId, 1);
    await waitFor('mismatch counted', async () => (await metric('messenger_user_sync_contract_mismatch_total')) === before + 1);
  });

  test('a FirstName longer than 128 characters is stored truncated with a warning', async () => {
    const userId = newId();
    await k.produce(topic, [userUpserted(userId, { version: 1, phone: nextPhone(), firstName: 'Ж'.repeat(150) })]);
    await untilVersion(userId, 1);
    assert.equal([...(await replicaRow(pool, userId))!.first_name].length, 128);
    assert.ok(logs.lines().some((l) => l.userId === userId && l.level === 40 && String(l.msg).includes('truncated')));
  });

  test('logs carry MessageId, correlation id, UserId and Version with phones and names masked', async () => {
    const userId = newId();
    const phone = nextPhone();
    const correlationId = newId();
    const msg = userUpserted(userId, { version: 1, phone, firstName: 'Зинаида', lastName: 'Заречная', correlationId });
    await k.produce(topic, [msg]);
    await untilVersion(userId, 1);
    const line = logs.lines().find((l) => l.msg === 'upserted' && l.userId === userId);
    assert.deepEqual(
      [line?.messageId, line?.correlationId, line?.version, line?.phone, line?.firstName],
      [msg.headers!['message-id'], correlationId, 1, `+7***${phone.slice(-4)}`, 'З***'],
    );
    assert.ok(!logs.text().includes(phone) && !logs.text().includes('Зинаида') && !logs.text().includes('Заречная'));
  });

  test('INV-MU-4: the consumer publishes nothing to Kafka — no outbox row, no record on any topic but the one it reads (and its DLQ)', async () => {
    const userId = newId();
    const phone = nextPhone();
    await k.produce(topic, [
      userUpserted(userId, { version: 1, phone }),
      userUpserted(userId, { version: 2, phone: nextPhone(), firstName: 'Пётр' }),
      userUpserted(userId, { version: 3, phone, status: 'Blocked' }),
    ]);
    await untilVersion(userId, 3);
    assert.equal((await pool.query('select 1 from platform.outbox')).rowCount, 0, 'no integration event was enqueued');
    // Whatever the handler had put in the outbox would be on its topic after a whole publisher run
    // (a run may be skipped while the timer's own run holds the lock: then ask again).
    await waitFor('a whole outbox publisher run', async () => (await app.platform.runner.runNow(OUTBOX_PUBLISHER_JOB)).outcome === 'success');
    const others = (await k.admin.listTopics()).filter((t) => t.startsWith(k.prefix) && t !== topic && t !== `${topic}.dlq`);
    for (const name of Object.values(TOPICS).filter((n) => n !== TOPICS.identityUsers)) assert.ok(others.includes(k.topic(name)), `${name} exists`);
    for (const t of others) {
      const held = (await k.admin.fetchTopicOffsets(t)).reduce((n, p) => n + Number(p.high) - Number(p.low), 0);
      assert.equal(held, 0, `${t} holds ${held} records`);
    }
  });

  test('every metric of the seed is exported', async () => {
    const text = await registry.metrics();
    for (const name of [
      'messenger_user_sync_consume_duration_ms',
      'messenger_users_upserted_total',
      'messenger_identity_stale_events_total',
      'messenger_user_phone_conflicts_total',
      'messenger_user_sync_dlq_total',
      'messenger_user_sync_lag_seconds',
      'messenger_contact_search_index_failures_total',
      'messenger_user_sync_contract_mismatch_total',
    ]) {
      assert.ok(text.includes(`# TYPE ${name} `), name);
    }
  });
});

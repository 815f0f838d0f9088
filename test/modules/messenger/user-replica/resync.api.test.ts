import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { newId } from '../../../../src/platform/time.ts';
import messenger from '../../../../src/modules/messenger/index.ts';
import { TOPICS } from '../../../../src/event-topics.ts';
import { buildTestApp } from '../../../support/app.ts';
import { createTestKafka } from '../../../support/kafka.ts';
import { waitFor } from '../../../support/wait.ts';
import { Registry } from '../../../../src/platform/observability/metrics.ts';
import { createLogger } from '../../../../src/platform/observability/index.ts';
import { systemClock } from '../../../../src/platform/time.ts';
import { createDb } from '../../../../src/platform/db/index.ts';
import { createUserSyncMetrics } from '../../../../src/modules/messenger/user-replica/metrics.ts';
import { resyncUserReplica } from '../../../../src/modules/messenger/user-replica/resync.ts';
import { messengerApp } from '../support/app.ts';
import { inboxed, nextPhone, replicaRow, searchDocument, userUpserted } from '../support/user-sync.ts';
import type { ResyncResult } from '../../../../src/modules/messenger/user-replica/resync.ts';
import { removeFromMediaSessions } from '../../../../src/modules/messenger/calls/deactivation.ts';
import { messengerPush } from '../support/push.ts';

/**
 * The replica resync runbook call on a real Kafka topic with the live consumer running: a replica
 * row damaged with a too-high version (which the version guard would protect, and the inbox would
 * never let the consumer see again) equals the topic's newest record after the call; only the
 * users asked for are touched; later records still apply through the normal guard.
 */

const k = await createTestKafka();
const { app, token, database } = await buildTestApp(
  { KAFKA_BROKERS: k.brokers.join(','), KAFKA_TOPIC_PREFIX: k.prefix, JOBS_ENABLED: 'true' },
  { modules: [messenger] },
);
await app.platform.startBackground();
const admin = await token({ admin: true });
const pool = database.pool;
const topic = k.topic(TOPICS.identityUsers);
// The bus creates the topics when it starts, in the background.
await waitFor('the users topic', async () => (await k.admin.listTopics()).includes(topic), 30_000);

type Reply = ResyncResult & { code?: string };
const resync = async (body?: object, as = admin) => {
  const res = await app.inject({
    method: 'POST',
    url: '/api/messenger/admin/user-replica/resync',
    headers: { authorization: `Bearer ${as}` },
    ...(body === undefined ? {} : { payload: body }),
  });
  return { status: res.statusCode, body: res.json() as Reply };
};

/** What a row holds, as the topic's record would put it. */
const fields = async (userId: string) => {
  const r = await replicaRow(pool, userId);
  return r && { first: r.first_name, last: r.last_name, phone: r.phone_number, active: r.is_active, version: Number(r.identity_user_version) };
};

async function damage(userId: string): Promise<void> {
  await pool.query(
    `update messenger.users set first_name = 'Испорчено', last_name = 'Испорчено', is_active = false, identity_user_version = 999 where id = $1`,
    [userId],
  );
}

describe('user replica resync (admin): re-applies pin.identity.users.v1 past the inbox and the version guard', () => {
  const [alice, bob, carol] = [newId(), newId(), newId()];
  const phones = { alice: nextPhone(), aliceOld: nextPhone(), bob: nextPhone(), carol: nextPhone() };

  test('a damaged row (wrong name, inactive, version 999) equals the topic newest record again; only the users asked for are touched', async () => {
    await k.produce(topic, [
      userUpserted(alice, { version: 1, firstName: 'Мария', lastName: 'Старая', phone: phones.aliceOld }),
      userUpserted(bob, { version: 1, firstName: 'Борис', lastName: 'Борисов', phone: phones.bob }),
      userUpserted(alice, { version: 2, firstName: 'Мария', lastName: 'Соколова', phone: phones.alice }),
      userUpserted(carol, { version: 1, firstName: 'Карина', lastName: 'Карпова', phone: phones.carol, status: 'Invited' }),
    ]);
    const aliceNewest = { first: 'Мария', last: 'Соколова', phone: phones.alice, active: true, version: 2 };
    const bobNewest = { first: 'Борис', last: 'Борисов', phone: phones.bob, active: true, version: 1 };
    await waitFor('the live consumer applied the topic', async () => (await fields(alice))?.version === 2 && (await fields(carol))?.version === 1 && (await fields(bob))?.version === 1);
    assert.deepEqual(await fields(alice), aliceNewest);

    await damage(alice);
    await damage(bob);
    const missing = newId();
    const res = await resync({ userIds: [alice, missing] });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.usersApplied, 1);
    assert.equal(res.body.usersOnTopic, 1);
    assert.deepEqual(res.body.notOnTopic, [missing]);
    assert.ok(res.body.messagesRead >= 4, `read ${res.body.messagesRead}`);
    assert.deepEqual(await fields(alice), aliceNewest, 'the row equals the newest record on the topic');
    const revision = Number((await replicaRow(pool, alice))!.revision);
    await waitFor('its search document re-indexed from the repaired row', async () => Number((await searchDocument(pool, alice))?.revision) === revision);
    assert.deepEqual(await searchDocument(pool, alice), { phone_number: phones.alice, is_active: true, revision: String(revision), first_name: 'Мария', last_name: 'Соколова' });
    assert.equal((await fields(bob))?.first, 'Испорчено', 'a user not asked for is left as it is');
    const leftGroups = (await k.admin.listGroups()).groups.filter((g) => g.groupId.startsWith(k.prefix) && g.groupId.includes('.resync.'));
    assert.deepEqual(leftGroups, [], 'the throwaway consumer group is deleted after the read');

    // Every user: bob is repaired too; carol (not damaged) is rewritten with what she already holds.
    const all = await resync();
    assert.equal(all.status, 200, JSON.stringify(all.body));
    assert.equal(all.body.usersApplied, 3);
    assert.deepEqual(all.body.notOnTopic, []);
    assert.deepEqual(await fields(bob), bobNewest);
    assert.deepEqual(await fields(alice), aliceNewest);
    assert.deepEqual(await fields(carol), { first: 'Карина', last: 'Карпова', phone: phones.carol, active: true, version: 1 });

    // The version is the topic's again, so the next change applies through the normal guard.
    await k.produce(topic, [userUpserted(alice, { version: 3, firstName: 'Мария', lastName: 'Новикова', phone: phones.alice })]);
    await waitFor('the live consumer applied version 3', async () => (await fields(alice))?.version === 3);
    assert.equal((await fields(alice))?.last, 'Новикова');
  });

  test('bad input answers 400 { code, message } and changes nothing; a user token is refused', async () => {
    await damage(carol);
    const before = await replicaRow(pool, carol);
    const cases: [object, string][] = [
      [{ userIds: [] }, 'VALIDATION_FAILED'],
      [{ userIds: ['not-a-uuid'] }, 'VALIDATION_FAILED'],
      [{ userIds: [carol, carol] }, 'VALIDATION_FAILED'],
      [{ userIds: Array.from({ length: 1001 }, () => newId()) }, 'VALIDATION_FAILED'],
      // A mistyped field would otherwise be dropped, and the call would take every user.
      [{ userId: carol }, 'MSG_USER_RESYNC_INVALID'],
    ];
    for (const [body, code] of cases) {
      const res = await resync(body);
      assert.deepEqual([res.status, res.body.code], [400, code], JSON.stringify(body).slice(0, 80));
    }
    assert.equal((await resync({ userIds: [carol] }, await token())).status, 403);
    assert.deepEqual(await replicaRow(pool, carol), before);
  });
});

describe('user replica resync while identity keeps publishing', () => {
  test('a record published during the resync is applied after the forced pass: the newer change is never rolled back', async () => {
    const dora = newId();
    const phone = nextPhone();
    await k.produce(topic, [userUpserted(dora, { version: 1, firstName: 'Дора', lastName: 'Первая', phone })]);
    await waitFor('dora applied', async () => (await fields(dora))?.version === 1);
    await damage(dora);
    const bus = app.platform.bus;
    let published = false;
    const result = await resyncUserReplica(
      {
        db: createDb(pool),
        clock: systemClock,
        log: createLogger('warn'),
        metrics: createUserSyncMetrics(new Registry(), 'resync-test'),
        phoneRegion: 'RU',
        partitionsConcurrently: 1,
        leaveMediaSessions: removeFromMediaSessions,
        push: messengerPush(),
        // The reader of the app's bus, which publishes version 2 once the first pass has read the
        // topic, and lets the resync go on only after the live consumer handled it: against the
        // damaged version (999) it was stale there and is in the inbox for good, so only the
        // resync's catch-up pass can still apply it over the forced version 1.
        openTopicReader: async (t, g) => {
          const reader = await bus.openTopicReader!(k.prefix + t, k.prefix + g);
          return {
            async readToEnd(onMessages) {
              await reader.readToEnd(onMessages);
              if (!published) {
                published = true;
                const messageId = newId();
                await k.produce(topic, [userUpserted(dora, { version: 2, firstName: 'Дора', lastName: 'Вторая', phone, messageId })]);
                await waitFor('the live consumer handled version 2', () => inboxed(pool, messageId));
              }
            },
            close: () => reader.close(),
          };
        },
      },
      [dora],
    );
    assert.deepEqual([result.usersApplied, result.laterRecordsApplied], [1, 1]);
    assert.deepEqual(await fields(dora), { first: 'Дора', last: 'Вторая', phone, active: true, version: 2 });
  });
});

describe('user replica resync on the in-process event bus', () => {
  test('answers 409 MSG_USER_RESYNC_NEEDS_KAFKA: that bus keeps nothing to read again', async () => {
    const m = await messengerApp();
    const res = await m.call<{ code: string }>(await m.token({ admin: true }), 'POST', '/api/messenger/admin/user-replica/resync', {});
    assert.deepEqual([res.status, res.body.code], [409, 'MSG_USER_RESYNC_NEEDS_KAFKA']);
  });
});

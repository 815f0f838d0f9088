import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp } from '../../support/app.ts';
import { createTestKafka, type ReadMessage } from '../../support/kafka.ts';
import { TOPICS } from '../../../src/event-topics.ts';
import identity from '../../../src/modules/identity/index.ts';
import type { UserAccessChangedKafkaEvent, UserUpsertedKafkaEvent } from '../../../src/contracts/identity-events.ts';
import { uniquePhone } from './support.ts';

/**
 * Identity end to end on the real broker: REST → outbox → publisher → Kafka, with the fan-out
 * worker run by the job runner (woken by NOTIFY) for roles above the inline threshold.
 */

const k = await createTestKafka();
const { app, token } = await buildTestApp(
  {
    KAFKA_BROKERS: k.brokers.join(','),
    KAFKA_TOPIC_PREFIX: k.prefix,
    JOBS_ENABLED: 'true',
    OUTBOX_POLLING_INTERVAL: '200ms',
    IDENTITY_INLINE_FANOUT_THRESHOLD: '3',
    IDENTITY_ACCESS_FANOUT_BATCH_SIZE: '2',
  },
  { modules: [identity] },
);
await app.platform.startBackground();
const headers = { authorization: `Bearer ${await token({ admin: true })}` };
const api = async (method: 'POST' | 'PATCH' | 'PUT', url: string, payload: object) => {
  const res = await app.inject({ method, url, headers, payload });
  assert.ok(res.statusCode < 300, `${method} ${url}: ${res.statusCode} ${res.body}`);
  return res.json();
};
const payloadOf = <P>(m: ReadMessage) => JSON.parse(m.value!.toString()) as P;

describe('identity on Kafka', () => {
  after(() => app.close());

  test('user create/patch put snapshots with increasing Version on pin.identity.users.v1 (6 partitions, key = UserId, envelope headers)', async () => {
    const topic = k.topic(TOPICS.identityUsers);
    const meta = await k.admin.fetchTopicMetadata({ topics: [topic] });
    assert.equal(meta.topics[0]!.partitions.length, 6);

    const user = await api('POST', '/api/identity/users', { name: { firstName: 'Мария', lastName: 'Кузнецова' }, phoneNumber: uniquePhone() });
    await api('PATCH', `/api/identity/users/${user.id}`, { name: { firstName: 'Мария', middleName: 'Ивановна', lastName: 'Кузнецова' } });
    await api('PATCH', `/api/identity/users/${user.id}`, { status: 'Archived' });

    const mine = (await k.readTopic(topic, { atLeast: 3 })).filter((m) => m.key === user.id);
    const upserts = mine.filter((m) => m.headers['event-type'] === 'UserUpsertedKafkaEvent');
    assert.deepEqual(upserts.map((m) => payloadOf<UserUpsertedKafkaEvent>(m).Version), [1, 2, 3]);
    assert.equal(new Set(mine.map((m) => m.partition)).size, 1, 'one key, one partition: per-user order holds');
    const last = payloadOf<UserUpsertedKafkaEvent>(upserts[2]!);
    assert.deepEqual(last, {
      UserId: user.id,
      Name: { FirstName: 'Мария', MiddleName: 'Ивановна', LastName: 'Кузнецова' },
      PhoneNumber: user.phoneNumber,
      Status: 'Archived',
      Version: 3,
      Type: 'Investor',
      CompanyId: null,
    });
    const h = upserts[0]!.headers;
    assert.equal(h['contract-version'], '1');
    assert.equal(h['aggregate-type'], 'User');
    assert.equal(h['aggregate-id'], user.id);
    assert.ok(h['message-id'] && h['occurred-at']);
  });

  test('set-role-permissions reaches Kafka for every user of each role: inline for a small role, through the queued worker for a big one', async () => {
    const small = await api('POST', '/api/identity/roles', { code: 'small', name: 'Small', permissions: ['a.read'] });
    const big = await api('POST', '/api/identity/roles', { code: 'big', name: 'Big', permissions: ['a.read'] });
    const smallUsers: string[] = [];
    const bigUsers: string[] = [];
    for (let i = 0; i < 7; i++) {
      const u = await api('POST', '/api/identity/users', { name: { firstName: 'U', lastName: String(i) }, phoneNumber: uniquePhone() });
      (i < 2 ? smallUsers : bigUsers).push(u.id);
      await api('POST', '/api/identity/role-assignments', { roleId: i < 2 ? small.id : big.id, userId: u.id, scopeType: 'Platform' });
    }
    const inline = await api('PUT', `/api/identity/roles/${small.id}/permissions`, { permissions: ['a.read', 'a.write'] });
    const queued = await api('PUT', `/api/identity/roles/${big.id}/permissions`, { permissions: ['a.read', 'a.write'] });
    assert.equal(inline.fanOut.mode, 'inline');
    assert.equal(queued.fanOut.mode, 'queued');

    // 7 grants + 2 inline + 5 from the worker (3 pages of 2).
    const topic = k.topic(TOPICS.identityAccess);
    const messages = await k.readTopic(topic, { atLeast: 14, timeoutMs: 30_000 });
    const fanned = messages.filter((m) => payloadOf<UserAccessChangedKafkaEvent>(m).ChangeReason === 'RolePermissionsChanged');
    const byUser = new Map(fanned.map((m) => [m.key!, payloadOf<UserAccessChangedKafkaEvent>(m)]));
    assert.deepEqual([...byUser.keys()].sort(), [...smallUsers, ...bigUsers].sort());
    for (const u of smallUsers) assert.equal(byUser.get(u)!.Version, inline.role.version);
    for (const u of bigUsers) {
      assert.equal(byUser.get(u)!.Version, queued.role.version);
      assert.deepEqual(byUser.get(u)!.ActiveAssignments.map((a) => a.RoleCode), ['big']);
    }
    for (const m of fanned) {
      assert.equal(m.headers['event-type'], 'UserAccessChangedKafkaEvent');
      assert.equal(m.headers['aggregate-type'], 'User');
    }

    const task = (await app.inject({ method: 'GET', url: `/api/identity/access-fanout-tasks?roleId=${big.id}`, headers })).json().tasks[0];
    assert.equal(task.status, 'Completed');
    assert.equal(task.processedCount, 5);
  });
});

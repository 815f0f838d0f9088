import { test } from 'node:test';
import assert from 'node:assert/strict';
import { messengerModule } from '../../../src/modules/messenger/index.ts';
import { notificationsModule } from '../../../src/modules/notifications/index.ts';
import { newId } from '../../../src/platform/time.ts';
import { buildTestApp } from '../../support/app.ts';
import { insertReplicaUser } from '../messenger/support/app.ts';

/**
 * A user the platform blocked (inactive in the user replica, as the event stream and every messenger
 * route refuse them: docs/security.md, "Blocked and archived users lose access") keeps neither the
 * in-app feed nor push tokens. The app checks every refusal against the API document.
 */

const { app, database, token } = await buildTestApp({}, { modules: [notificationsModule(), messengerModule()] });

const as = async (userId: string, method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) => {
  const res = await app.inject({ method, url, headers: { authorization: `Bearer ${await token({ userId })}` }, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, code: res.body ? (res.json() as { code?: string }).code : undefined };
};
const tokensOf = async (userId: string) =>
  (await database.pool.query<{ n: number }>('select count(*)::int as n from notifications.push_tokens where user_id = $1', [userId])).rows[0]!.n;

test('a platform-blocked user is refused the feed, one notification, mark-read and push tokens with 403 MSG_USER_INACTIVE; nothing is stored', async () => {
  const blocked = await insertReplicaUser(database.pool, { active: false });
  const id = newId();
  assert.deepEqual(await as(blocked.id, 'GET', '/api/notifications'), { status: 403, code: 'MSG_USER_INACTIVE' });
  assert.deepEqual(await as(blocked.id, 'GET', `/api/notifications/${id}`), { status: 403, code: 'MSG_USER_INACTIVE' });
  assert.deepEqual(await as(blocked.id, 'POST', `/api/notifications/${id}/read`, { version: 1 }), { status: 403, code: 'MSG_USER_INACTIVE' });
  assert.deepEqual(await as(blocked.id, 'POST', '/api/notifications/push-tokens', { token: `fcm-${newId()}`, platform: 'android' }), {
    status: 403,
    code: 'MSG_USER_INACTIVE',
  });
  assert.deepEqual(await as(blocked.id, 'DELETE', '/api/notifications/push-tokens', { token: `fcm-${newId()}` }), { status: 403, code: 'MSG_USER_INACTIVE' });
  assert.equal(await tokensOf(blocked.id), 0);
});

test('an active user, and one the replica has not seen yet, keep the feed and push tokens', async () => {
  const active = await insertReplicaUser(database.pool);
  for (const userId of [active.id, newId()]) {
    assert.equal((await as(userId, 'GET', '/api/notifications')).status, 200);
    assert.equal((await as(userId, 'POST', '/api/notifications/push-tokens', { token: `fcm-${newId()}`, platform: 'android' })).status, 204);
    assert.equal(await tokensOf(userId), 1);
  }
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { notificationsModule } from '../../../src/modules/notifications/index.ts';
import { newId } from '../../../src/platform/time.ts';
import { buildTestApp } from '../../support/app.ts';

const { app, database, token } = await buildTestApp({}, { modules: [notificationsModule({ pushTokensMaxPerUser: 2 })] });

const register = async (userId: string, pushToken: string) => {
  const res = await app.inject({
    method: 'POST',
    url: '/api/notifications/push-tokens',
    headers: { authorization: `Bearer ${await token({ userId })}` },
    payload: { token: pushToken, platform: 'android' },
  });
  return { status: res.statusCode, code: res.body ? (res.json().code as string) : undefined };
};
const ownerOf = async (pushToken: string) =>
  (await database.pool.query<{ user_id: string }>('select user_id from notifications.push_tokens where token = $1', [pushToken])).rows[0]?.user_id;

test('a token bound to another user is refused 409 NTF_PUSH_TOKEN_TAKEN and stays with its user', async () => {
  const [alice, mallory] = [newId(), newId()];
  const device = `fcm-${newId()}`;
  assert.equal((await register(alice, device)).status, 204);
  assert.deepEqual(await register(mallory, device), { status: 409, code: 'NTF_PUSH_TOKEN_TAKEN' });
  assert.equal(await ownerOf(device), alice);
  assert.equal((await register(alice, device)).status, 204, 'its own user registers it again');
});

test('a user holds at most its limit of push tokens: one more is 409 NTF_PUSH_TOKEN_LIMIT, even when sent concurrently', async () => {
  const user = newId();
  // Four at once: as many as one user may have in progress (HTTP_MAX_CONCURRENT_REQUESTS_PER_USER).
  const results = await Promise.all(Array.from({ length: 4 }, () => register(user, `fcm-${newId()}`)));
  assert.deepEqual(results.map((r) => r.status).sort(), [204, 204, 409, 409]);
  assert.ok(results.filter((r) => r.status === 409).every((r) => r.code === 'NTF_PUSH_TOKEN_LIMIT'));
  const { rows } = await database.pool.query<{ n: number }>('select count(*)::int as n from notifications.push_tokens where user_id = $1', [user]);
  assert.equal(rows[0]!.n, 2);
});

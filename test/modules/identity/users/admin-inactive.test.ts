import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import identity from '../../../../src/modules/identity/index.ts';
import { signToken } from '../../../../src/platform/http/auth.ts';
import { newId } from '../../../../src/platform/time.ts';
import { buildTestApp } from '../../../support/app.ts';
import { changedTables, storedDigests } from '../../../support/stored.ts';
import { uniquePhone } from '../support.ts';

/**
 * An admin token outlives its user's blocking: an admin whose identity user exists and is not
 * Active is refused on the identity and ops admin routes with 403 IDENTITY_ADMIN_INACTIVE, and
 * changes nothing. An admin identity does not know (an operator account elsewhere) is not.
 */
describe('admin routes refuse an admin whose identity user is not Active', () => {
  test('Blocked, Archived and Invited admins get 403 IDENTITY_ADMIN_INACTIVE on identity and ops routes; an Active or unknown admin passes', async () => {
    const t = await buildTestApp({}, { modules: [identity] });
    const pool = t.database.pool;
    const asAdmin = async (userId: string) => ({ authorization: `Bearer ${await t.token({ userId, admin: true })}` });
    const operator = await asAdmin(newId()); // not an identity user
    const create = async () =>
      t.app.inject({
        method: 'POST',
        url: '/api/identity/users',
        headers: operator,
        payload: { name: { firstName: 'Анна', lastName: 'Смирнова' }, phoneNumber: uniquePhone(), type: 'Investor' },
      });
    const made = await create();
    assert.equal(made.statusCode, 201, made.body);
    const adminUser = made.json() as { id: string };
    const other = (await create()).json() as { id: string };

    const requests = [
      { method: 'GET' as const, url: `/api/identity/users/${other.id}` },
      { method: 'PATCH' as const, url: `/api/identity/users/${other.id}`, payload: { status: 'Blocked' } },
      { method: 'POST' as const, url: '/api/identity/roles', payload: { code: `r-${newId().slice(-8)}`, name: 'R', permissions: [] } },
      { method: 'GET' as const, url: '/api/ops/jobs' },
    ];
    const headers = await asAdmin(adminUser.id);
    for (const status of ['Blocked', 'Archived', 'Invited']) {
      await pool.query('update identity.users set status = $2 where id = $1', [adminUser.id, status]);
      for (const req of requests) {
        const before = await storedDigests(pool);
        const res = await t.app.inject({ ...req, headers });
        assert.equal(res.statusCode, 403, `${status}: ${req.method} ${req.url} → ${res.body}`);
        assert.equal((res.json() as { code: string }).code, 'IDENTITY_ADMIN_INACTIVE');
        assert.deepEqual(changedTables(before, await storedDigests(pool)), [], `${status}: ${req.method} ${req.url} stored something`);
      }
    }

    await pool.query(`update identity.users set status = 'Active' where id = $1`, [adminUser.id]);
    assert.equal((await t.app.inject({ method: 'GET', url: `/api/identity/users/${other.id}`, headers })).statusCode, 200);
    assert.equal((await t.app.inject({ method: 'GET', url: '/api/ops/jobs', headers })).statusCode, 200);
    assert.equal((await t.app.inject({ method: 'GET', url: '/api/ops/jobs', headers: operator })).statusCode, 200, 'an admin identity does not know');
  });

  test("a read-only ops viewer whose identity user is Blocked gets 403 IDENTITY_ADMIN_INACTIVE on the console's API; Active, it reads", async () => {
    const t = await buildTestApp({}, { modules: [identity] });
    const pool = t.database.pool;
    const made = await t.app.inject({
      method: 'POST',
      url: '/api/identity/users',
      headers: { authorization: `Bearer ${await t.token({ userId: newId(), admin: true })}` },
      payload: { name: { firstName: 'Ольга', lastName: 'Иванова' }, phoneNumber: uniquePhone(), type: 'Investor' },
    });
    assert.equal(made.statusCode, 201, made.body);
    const viewerId = (made.json() as { id: string }).id;
    const token = await signToken({ userId: viewerId, admin: false, opsRole: 'viewer' }, t.config.JWT_SECRET, { issuer: t.config.AUTH_ISSUER, audience: t.config.AUTH_AUDIENCE });
    const headers = { authorization: `Bearer ${token}` };
    assert.equal((await t.app.inject({ method: 'GET', url: '/api/ops/jobs', headers })).statusCode, 200);
    await pool.query(`update identity.users set status = 'Blocked' where id = $1`, [viewerId]);
    const res = await t.app.inject({ method: 'GET', url: '/api/ops/jobs', headers });
    assert.equal(res.statusCode, 403, res.body);
    assert.equal((res.json() as { code: string }).code, 'IDENTITY_ADMIN_INACTIVE');
  });
});

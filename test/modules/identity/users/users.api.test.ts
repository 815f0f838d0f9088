import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import identity from '../../../../src/modules/identity/index.ts';
import { ManualClock } from '../../../../src/platform/time.ts';
import { buildTestApp } from '../../../support/app.ts';
import { outboxEvents, uniquePhone, USERS_TOPIC } from '../support.ts';

const clock = new ManualClock('2026-03-01T09:00:00Z');
const t = await buildTestApp({}, { modules: [identity], clock });
const adminToken = await t.token({ admin: true });
const auth = (token = adminToken) => ({ authorization: `Bearer ${token}` });

async function createUser(body: Record<string, unknown>, token = adminToken) {
  return t.app.inject({ method: 'POST', url: '/api/identity/users', headers: auth(token), payload: body });
}

const userCount = async () => (await t.database.pool.query(`select count(*)::int as n from identity.users`)).rows[0].n as number;

describe('identity users REST', () => {
  // Background work stops before the file's database is dropped (file-level hooks run later).
  after(() => t.app.close());

  test('POST creates the user with an E.164 phone and Version 1, and writes its UserUpserted snapshot to the outbox', async () => {
    const companyId = '0190a000-0000-7000-8000-0000000000c1';
    const res = await createUser({
      name: { firstName: 'Иван', middleName: 'Иванович', lastName: 'Петров' },
      phoneNumber: '8 (999) 111-22-33',
      type: 'CompanyEmployee',
      companyId,
    });
    assert.equal(res.statusCode, 201, res.body);
    const user = res.json();
    assert.equal(user.phoneNumber, '+79991112233');
    assert.equal(user.version, 1);
    assert.equal(user.status, 'Active');

    const events = (await outboxEvents(t.database.pool, USERS_TOPIC)).filter((e) => e.key === user.id);
    assert.equal(events.length, 1);
    const [e] = events;
    assert.equal(e!.eventType, 'UserUpsertedKafkaEvent');
    assert.equal(e!.aggregateType, 'User');
    assert.equal(e!.aggregateId, user.id);
    assert.deepEqual(e!.payload, {
      UserId: user.id,
      Name: { FirstName: 'Иван', MiddleName: 'Иванович', LastName: 'Петров' },
      PhoneNumber: '+79991112233',
      Status: 'Active',
      Version: 1,
      Type: 'CompanyEmployee',
      CompanyId: companyId,
    });
  });

  test('each PATCH that changes something bumps Version and writes a new snapshot; a no-op PATCH writes nothing', async () => {
    const created = (await createUser({ name: { firstName: 'Анна', lastName: 'Смирнова' }, phoneNumber: uniquePhone() })).json();
    const patch = (payload: Record<string, unknown>) =>
      t.app.inject({ method: 'PATCH', url: `/api/identity/users/${created.id}`, headers: auth(), payload });

    clock.advance(1000);
    const renamed = await patch({ name: { firstName: 'Анна', lastName: 'Иванова' } });
    assert.equal(renamed.statusCode, 200, renamed.body);
    assert.equal(renamed.json().version, 2);
    const rephoned = await patch({ phoneNumber: '+7 999 444 55 66' });
    assert.equal(rephoned.json().version, 3);
    assert.equal(rephoned.json().phoneNumber, '+79994445566');
    const same = await patch({ phoneNumber: '89994445566', status: 'Active' });
    assert.equal(same.statusCode, 200);
    assert.equal(same.json().version, 3);

    const blocked = await patch({ status: 'Blocked' });
    assert.equal(blocked.json().version, 4);

    const events = (await outboxEvents<{ Version: number; Status: string; Name: { LastName: string } }>(t.database.pool, USERS_TOPIC)).filter(
      (e) => e.key === created.id,
    );
    const upserts = events.filter((e) => e.eventType === 'UserUpsertedKafkaEvent');
    assert.deepEqual(upserts.map((e) => e.payload.Version), [1, 2, 3, 4]);
    assert.equal(upserts[1]!.payload.Name.LastName, 'Иванова');
    assert.equal(upserts[3]!.payload.Status, 'Blocked');
    const blockedEvents = events.filter((e) => e.eventType === 'UserBlockedKafkaEvent');
    assert.equal(blockedEvents.length, 1);
    assert.equal((blockedEvents[0]!.payload as unknown as { Version: number }).Version, 4);
  });

  test('an invalid phone gets IDENTITY_INVALID_PHONE and creates nothing', async () => {
    const before = await userCount();
    const outboxBefore = (await outboxEvents(t.database.pool, USERS_TOPIC)).length;
    const res = await createUser({ name: { firstName: 'Пётр', lastName: '' }, phoneNumber: '+7 12' });
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().code, 'IDENTITY_INVALID_PHONE');
    assert.equal(await userCount(), before);
    assert.equal((await outboxEvents(t.database.pool, USERS_TOPIC)).length, outboxBefore);
  });

  test('a phone another user has gets IDENTITY_PHONE_TAKEN, on create and on patch, and changes nothing', async () => {
    const phone = uniquePhone();
    const first = (await createUser({ name: { firstName: 'A', lastName: 'B' }, phoneNumber: phone })).json();
    const second = (await createUser({ name: { firstName: 'C', lastName: 'D' }, phoneNumber: uniquePhone() })).json();
    const dup = await createUser({ name: { firstName: 'E', lastName: 'F' }, phoneNumber: phone });
    assert.equal(dup.statusCode, 409);
    assert.equal(dup.json().code, 'IDENTITY_PHONE_TAKEN');
    const patch = await t.app.inject({ method: 'PATCH', url: `/api/identity/users/${second.id}`, headers: auth(), payload: { phoneNumber: phone } });
    assert.equal(patch.statusCode, 409);
    const after = await t.app.inject({ method: 'GET', url: `/api/identity/users/${second.id}`, headers: auth() });
    assert.equal(after.json().version, 1);
    assert.notEqual(after.json().phoneNumber, first.phoneNumber);
  });

  test("a client-given id (an identity provider's sub) is the user's id, lower-cased, and the UserUpserted event carries it", async () => {
    const sub = '0190A000-0000-7000-8000-0000000005AB';
    const res = await createUser({ id: sub, name: { firstName: 'Ида', lastName: 'Ли' }, phoneNumber: uniquePhone() });
    assert.equal(res.statusCode, 201, res.body);
    assert.equal(res.json().id, sub.toLowerCase());
    const events = (await outboxEvents<{ UserId: string }>(t.database.pool, USERS_TOPIC)).filter((e) => e.key === sub.toLowerCase());
    assert.deepEqual(events.map((e) => [e.eventType, e.payload.UserId]), [['UserUpsertedKafkaEvent', sub.toLowerCase()]]);
  });

  test('an id another user has is 409 IDENTITY_USER_ID_TAKEN and creates nothing', async () => {
    const id = '0190a000-0000-7000-8000-0000000005ac';
    assert.equal((await createUser({ id, name: { firstName: 'A', lastName: 'B' }, phoneNumber: uniquePhone() })).statusCode, 201);
    const before = await userCount();
    const outboxBefore = (await outboxEvents(t.database.pool, USERS_TOPIC)).length;
    const dup = await createUser({ id: id.toUpperCase(), name: { firstName: 'C', lastName: 'D' }, phoneNumber: uniquePhone() });
    assert.deepEqual([dup.statusCode, dup.json().code], [409, 'IDENTITY_USER_ID_TAKEN']);
    assert.equal(await userCount(), before);
    assert.equal((await outboxEvents(t.database.pool, USERS_TOPIC)).length, outboxBefore);
    const stored = await t.app.inject({ method: 'GET', url: `/api/identity/users/${id}`, headers: auth() });
    assert.equal(stored.json().name.firstName, 'A');
  });

  test('an id that is not a UUID is 400 VALIDATION_FAILED, not dropped', async () => {
    const before = await userCount();
    const res = await createUser({ id: 'auth0|12345', name: { firstName: 'A', lastName: 'B' }, phoneNumber: uniquePhone() });
    assert.deepEqual([res.statusCode, res.json().code], [400, 'VALIDATION_FAILED']);
    assert.equal(await userCount(), before);
  });

  test('a non-admin token gets 403, no token 401, and nothing is created', async () => {
    const before = await userCount();
    const userToken = await t.token({ admin: false });
    const forbidden = await createUser({ name: { firstName: 'X', lastName: 'Y' }, phoneNumber: uniquePhone() }, userToken);
    assert.equal(forbidden.statusCode, 403);
    assert.equal(forbidden.json().code, 'AUTH_FORBIDDEN');
    const anonymous = await t.app.inject({ method: 'POST', url: '/api/identity/users', payload: { name: { firstName: 'X', lastName: 'Y' }, phoneNumber: uniquePhone() } });
    assert.equal(anonymous.statusCode, 401);
    assert.equal(await userCount(), before);
  });

  test('malformed bodies and unknown users get clear errors', async () => {
    const noFirst = await createUser({ name: { lastName: 'Y' }, phoneNumber: uniquePhone() });
    assert.equal(noFirst.statusCode, 400);
    assert.equal(noFirst.json().code, 'VALIDATION_FAILED');
    const badStatus = await createUser({ name: { firstName: 'X', lastName: 'Y' }, phoneNumber: uniquePhone(), status: 'Deleted' });
    assert.equal(badStatus.statusCode, 400);
    const missing = await t.app.inject({
      method: 'PATCH',
      url: '/api/identity/users/0190a000-0000-7000-8000-00000000dead',
      headers: auth(),
      payload: { status: 'Archived' },
    });
    assert.equal(missing.statusCode, 404);
    assert.equal(missing.json().code, 'IDENTITY_USER_NOT_FOUND');
    const empty = await t.app.inject({ method: 'PATCH', url: '/api/identity/users/0190a000-0000-7000-8000-00000000dead', headers: auth(), payload: {} });
    assert.equal(empty.statusCode, 400);
  });
});

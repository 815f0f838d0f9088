import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp } from '../../../support/app.ts';
import { createTestKafka } from '../../../support/kafka.ts';
import identity from '../../../../src/modules/identity/index.ts';
import { messengerModule } from '../../../../src/modules/messenger/index.ts';
import { waitFor } from '../../../support/wait.ts';

/**
 * End to end through the identity REST API: identity's outbox publishes UserUpserted on
 * pin.identity.users.v1 (real Kafka), the messenger's consumer applies it to the replica, the
 * indexer writes the search document, and contact search finds the user by the phone as typed.
 */

const k = await createTestKafka();
const { app, token } = await buildTestApp(
  {
    KAFKA_BROKERS: k.brokers.join(','),
    KAFKA_TOPIC_PREFIX: k.prefix,
    JOBS_ENABLED: 'true',
    OUTBOX_POLLING_INTERVAL: '200ms',
    // The waits poll the search route every 10 ms: the per-user limit (30/min) would answer 429
    // after 300 ms, failing any wait the replica needs longer for (it did, on a loaded CI run).
    MESSENGER_RATE_LIMIT_CONTACT_SEARCHES_PER_MINUTE: '0',
  },
  { modules: [identity, messengerModule({ contactSearchIndexIntervalMs: 200 })] },
);
await app.platform.startBackground();
const admin = await token({ admin: true });
const viewer = await token();

const search = (phone: string, as = viewer) =>
  app.inject({ method: 'GET', url: `/api/messenger/contacts/search?phone=${encodeURIComponent(phone)}`, headers: { authorization: `Bearer ${as}` } });

describe('identity user API → pin.identity.users.v1 → replica → contact search', () => {
  after(() => app.close());

  test('a user patched through the identity API is found by the new phone, typed as a person types it', async () => {
    const created = await app.inject({
      method: 'POST',
      url: '/api/identity/users',
      headers: { authorization: `Bearer ${admin}` },
      payload: { name: { firstName: 'Мария', middleName: 'Ивановна', lastName: 'Соколова' }, phoneNumber: '+7 916 555-01-01' },
    });
    assert.equal(created.statusCode, 201, created.body);
    const user = created.json() as { id: string };
    await waitFor('found by the first phone', async () => (await search('+79165550101')).statusCode === 200);

    const patched = await app.inject({
      method: 'PATCH',
      url: `/api/identity/users/${user.id}`,
      headers: { authorization: `Bearer ${admin}` },
      payload: { phoneNumber: '+79165550202' },
    });
    assert.equal(patched.statusCode, 200, patched.body);

    await waitFor('found by the new phone', async () => (await search('8 (916) 555-02-02')).statusCode === 200);
    const found = await search('8 (916) 555-02-02');
    assert.deepEqual(found.json(), {
      userId: user.id,
      firstName: 'Мария',
      middleName: 'Ивановна',
      lastName: 'С***', // masked until the contact is Accepted (INV-MU-3)
      lastNameMasked: true,
      phoneNumber: '+79165550202',
    });
    const old = await search('+7 916 555 01 01');
    assert.equal(old.statusCode, 404);
    assert.equal(old.json().code, 'MSG_CONTACT_USER_NOT_FOUND');

    // The user sees their own last name.
    const self = await search('+79165550202', await token({ userId: user.id }));
    assert.equal(self.json().lastName, 'Соколова');

    // Blocked through identity: no longer found.
    await app.inject({ method: 'PATCH', url: `/api/identity/users/${user.id}`, headers: { authorization: `Bearer ${admin}` }, payload: { status: 'Blocked' } });
    await waitFor('blocked user no longer found', async () => (await search('+79165550202')).statusCode === 404);
  });

  test('contact search validates its input and needs a user token', async () => {
    const bad = await search('12');
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.json().code, 'MSG_CONTACT_SEARCH_INVALID_PHONE');
    const anonymous = await app.inject({ method: 'GET', url: '/api/messenger/contacts/search?phone=%2B79165550202' });
    assert.equal(anonymous.statusCode, 401);
    const spec = (await app.inject({ method: 'GET', url: '/docs/json' })).json() as { paths: Record<string, unknown> };
    assert.ok(spec.paths['/api/messenger/contacts/search']);
    assert.ok(spec.paths['/api/messenger/admin/user-phone-conflicts']);
  });
});

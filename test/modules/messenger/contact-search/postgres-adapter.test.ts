import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPostgresContactSearch } from '../../../../src/modules/messenger/contact-search/postgres-adapter.ts';
import { SearchUnavailableError } from '../../../../src/modules/messenger/contact-search/port.ts';
import { newId } from '../../../../src/platform/time.ts';
import { createTestDatabase } from '../../../support/db.ts';
import { contactSearchContract } from './contract.ts';

/** The contact search contract against the PostgreSQL adapter (used when ELASTICSEARCH_URL is unset). */
contactSearchContract('PostgreSQL adapter', async (db) => createPostgresContactSearch(db, { now: () => new Date() }));

test("PostgreSQL adapter: a failed write says the driver's reason, never the statement's names and phones", async () => {
  const t = await createTestDatabase({ poolMax: 1 });
  const index = createPostgresContactSearch(t.db, { now: () => new Date() });
  const doc = { userId: newId(), firstName: 'Ольга'.repeat(30), middleName: null, lastName: 'Орлова', phoneNumber: '+79161234567', isActive: true, revision: 1 };
  await assert.rejects(index.index([doc]), (err: unknown) => {
    assert.ok(err instanceof SearchUnavailableError);
    assert.match(err.message, /value too long/);
    assert.doesNotMatch(err.message, /Орлова|\+79161234567|insert into/);
    return true;
  });
});

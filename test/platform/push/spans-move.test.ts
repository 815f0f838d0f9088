import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrateDatabase, MIGRATIONS_DIR } from '../../../src/platform/db/index.ts';
import { createEmptyDatabase } from '../../support/db.ts';

/**
 * The chats' membership spans, which the event stream reads to judge who may read a chat event,
 * moved from the messenger's schema into push's (drizzle/push/0001), so no statement of the push
 * part names a module's table: a database that ran the migrations before the move keeps every span.
 */

/** The migrations as they were before the move: without push/0001 and the messenger's no-op step that records it. */
function migrationsBeforeTheMove(): string {
  const dir = mkdtempSync(join(tmpdir(), 'pin-before-spans-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(MIGRATIONS_DIR, dir, { recursive: true });
  for (const [part, step] of [['push', '0001_membership_spans_from_messenger'], ['messenger.realtime', '0018_membership_spans_to_push']] as const) {
    const journalPath = join(dir, part, 'meta/_journal.json');
    const journal = JSON.parse(readFileSync(journalPath, 'utf8')) as { entries: { tag: string }[] };
    journal.entries = journal.entries.filter((e) => e.tag !== step);
    writeFileSync(journalPath, JSON.stringify(journal));
    rmSync(join(dir, part, `${step}.sql`));
  }
  return dir;
}

const SPANS = `select chat_id, user_id, from_version, to_version from %s order by chat_id, user_id, from_version`;

test('migrating a database of before the move keeps every membership span, now in push, and the messenger keeps none', async () => {
  const db = await createEmptyDatabase({ poolMax: 2 });
  await migrateDatabase(db.pool, migrationsBeforeTheMove());
  await db.pool.query(`insert into messenger.chat_membership_spans (chat_id, user_id, from_version, to_version) values
    ('01900000-0000-7000-8000-0000000000c1', '01900000-0000-7000-8000-0000000000b1', 0, null),
    ('01900000-0000-7000-8000-0000000000c1', '01900000-0000-7000-8000-0000000000b2', 0, 3),
    ('01900000-0000-7000-8000-0000000000c1', '01900000-0000-7000-8000-0000000000b2', 5, null)`);
  const before = (await db.pool.query(SPANS.replace('%s', 'messenger.chat_membership_spans'))).rows;

  await migrateDatabase(db.pool);

  assert.deepEqual((await db.pool.query(SPANS.replace('%s', 'push.chat_membership_spans'))).rows, before);
  assert.equal(before.length, 3);
  const { rows } = await db.pool.query(`select to_regclass('messenger.chat_membership_spans') as t`);
  assert.deepEqual(rows, [{ t: null }]);
  // The check moved with it: a span cannot end before it starts.
  await assert.rejects(
    db.pool.query(`insert into push.chat_membership_spans values ('01900000-0000-7000-8000-0000000000c2', '01900000-0000-7000-8000-0000000000b1', 4, 4)`),
    /ck_chat_membership_spans_versions/,
  );
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DrizzleQueryError } from 'drizzle-orm';
import { pgTable, serial, text } from 'drizzle-orm/pg-core';
import { createLogger, safeErrorMessage } from '../../../src/platform/observability/logger.ts';
import { createTestDatabase } from '../../support/db.ts';

// At the top level: the drop hook createTestDatabase registers then runs when the file ends.
const tdb = await createTestDatabase({ poolMax: 2 });
await tdb.pool.query(`create table logged_people (id serial primary key, phone text not null, first_name text,
  constraint logged_people_phone_key unique (phone))`);
const people = pgTable('logged_people', { id: serial('id').primaryKey(), phone: text('phone').notNull(), firstName: text('first_name') });

const PHONE = '+79991234567';
const NAME = 'Евлампия';
const BODY = 'secret message body\nparams: on a second line';

/** A logger writing to memory, configured exactly like the service's. */
function capturedLogger(): { log: ReturnType<typeof createLogger>; lines: () => Record<string, unknown>[]; text: () => string } {
  const out: string[] = [];
  const log = createLogger('info', { write: (line: string) => void out.push(line) });
  return { log, lines: () => out.map((l) => JSON.parse(l) as Record<string, unknown>), text: () => out.join('') };
}

function assertNoValues(text: string): void {
  for (const value of [PHONE, PHONE.slice(2), NAME, 'secret message body', 'params:']) {
    assert.equal(text.includes(value), false, `the log contains ${JSON.stringify(value)}:\n${text}`);
  }
}

async function duplicateInsertError(): Promise<unknown> {
  await tdb.db.insert(people).values({ phone: PHONE, firstName: NAME }).onConflictDoNothing();
  try {
    await tdb.db.insert(people).values({ phone: PHONE, firstName: `${NAME} ${BODY}` });
  } catch (err) {
    return err;
  }
  throw new Error('the duplicate insert succeeded');
}

test('a failed drizzle insert is logged with its SQLSTATE and constraint, without the bound values', async () => {
  const err = await duplicateInsertError();
  assert.ok(err instanceof DrizzleQueryError);
  assert.match(err.message, /params:/); // what drizzle puts in the message, and the logger must not
  const { log, lines, text } = capturedLogger();
  log.error({ err }, 'insert failed');
  assertNoValues(text());
  const logged = lines()[0]!.err as Record<string, unknown> & { cause: Record<string, unknown> };
  assert.equal(logged.type, 'DrizzleQueryError');
  assert.match(String(logged.message), /^Failed query: insert into "logged_people"/);
  assert.match(String(logged.stack), /^Error: Failed query: insert into "logged_people".*\n\s+at /);
  assert.equal(logged.cause.code, '23505');
  assert.equal(logged.cause.constraint, 'logged_people_phone_key');
  assert.equal(logged.cause.table, 'logged_people');
  assert.equal(logged.cause.routine, '_bt_check_unique');
  assert.match(String(logged.cause.message), /duplicate key value violates unique constraint "logged_people_phone_key"/);
  for (const key of ['params', 'query']) assert.equal(key in logged, false, key);
  assert.equal('detail' in logged.cause, false);
});

test('a unique violation from pg keeps code and constraint but not the key in `detail`', async () => {
  const err = await tdb.pool.query('insert into logged_people (phone, first_name) values ($1, $2)', [PHONE, NAME]).then(
    () => assert.fail('the duplicate insert succeeded'),
    (e: unknown) => e as { detail?: string },
  );
  assert.match(String(err.detail), new RegExp(`\\(phone\\)=\\(\\${PHONE}\\)`)); // pg puts the phone there
  const { log, lines, text } = capturedLogger();
  log.error(err, 'insert failed'); // an error as the first argument goes through the same serializer
  assertNoValues(text());
  const logged = lines()[0]!.err as Record<string, unknown>;
  assert.equal(logged.code, '23505');
  assert.equal(logged.constraint, 'logged_people_phone_key');
  assert.equal(logged.type, 'DatabaseError');
});

test('errors wrapping a failed query keep their own message and have every cause scrubbed', async () => {
  const dbErr = await duplicateInsertError();
  const { log, lines, text } = capturedLogger();
  log.error({ err: new Error('job run failed', { cause: new Error('batch failed', { cause: dbErr }) }) }, 'run failed');
  assertNoValues(text());
  const logged = lines()[0]!.err as { message: string; cause: { message: string; cause: { type: string; cause: { code: string } } } };
  assert.equal(logged.message, 'job run failed');
  assert.equal(logged.cause.message, 'batch failed');
  assert.equal(logged.cause.cause.type, 'DrizzleQueryError');
  assert.equal(logged.cause.cause.cause.code, '23505');
});

test('a data exception does not echo the rejected input', async () => {
  const err = await tdb.pool.query('select $1::uuid', [PHONE]).then(
    () => assert.fail('the cast succeeded'),
    (e: unknown) => e as Error & { code?: string },
  );
  assert.equal(err.code, '22P02');
  assert.match(err.message, new RegExp(`\\${PHONE}`)); // pg quotes the input in the message
  assert.equal(safeErrorMessage(err), 'invalid input syntax for type uuid: "[REDACTED]"');
  const { log, text } = capturedLogger();
  log.warn({ err }, 'bad input');
  assertNoValues(text());
  assert.match(text(), /"code":"22P02"/);
});

test('ordinary errors are logged as before: message, stack and own properties', () => {
  const { log, lines } = capturedLogger();
  const err = Object.assign(new Error('kafka broker unreachable'), { code: 'ECONNREFUSED', retriable: true });
  log.error({ err }, 'publish failed');
  const logged = lines()[0]!.err as Record<string, unknown>;
  assert.equal(logged.type, 'Error');
  assert.equal(logged.message, 'kafka broker unreachable');
  assert.match(String(logged.stack), /^Error: kafka broker unreachable\n\s+at /);
  assert.equal(logged.code, 'ECONNREFUSED');
  assert.equal(logged.retriable, true);
});

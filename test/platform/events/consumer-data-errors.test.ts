import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { sql } from 'drizzle-orm';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { createEffectsTable, effects, labelledMessage, recordEffect, testLog, type LabelPayload } from './support.ts';
import { Registry } from '../../../src/platform/observability/metrics.ts';
import type { ConsumerDefinition, OutgoingMessage } from '../../../src/platform/events/bus.ts';
import type { Db } from '../../../src/platform/db/index.ts';
import { consumerMetrics } from '../../../src/platform/events/consumer-metrics.ts';
import { createMessageProcessor, resolveConsumer } from '../../../src/platform/events/consumer-runner.ts';
import { dataErrorAsPoison, deterministicSqlState } from '../../../src/platform/events/consumer-transaction.ts';
import type { EventEnvelope } from '../../../src/platform/events/envelope.ts';
import { PoisonMessageError } from '../../../src/platform/events/errors.ts';
import { metricValue } from '../../support/metrics.ts';

/**
 * A handler that hits a deterministic SQL data error (class 22, check violation) on a real table
 * would hit it on every retry: the runner dead-letters the message instead of holding the
 * partition forever. Errors a retry can cure (serialization failure, deadlock, unique race) are
 * still retried.
 */

const t: TestDatabase = await createTestDatabase();
await createEffectsTable(t.pool);
await t.pool.query(`create table public.test_amounts (
  id bigserial primary key,
  label text not null,
  amount bigint not null default 0 constraint test_amounts_nonneg check (amount >= 0),
  note varchar(5),
  ref uuid,
  constraint test_amounts_label_unique unique (label)
)`);

/** A number that passes a payload's Integer check but not a bigint column. */
const HUGE = '100000000000000000000';

/** What the handler writes for a label: real statements that fail in PostgreSQL for the bad ones. */
async function write(tx: Db, label: string): Promise<void> {
  const base = label.replace(/^.*:/, '');
  switch (base) {
    case 'overflow': // 22003 numeric_value_out_of_range
      await tx.execute(sql`insert into public.test_amounts (label, amount) values (${label}, ${HUGE})`);
      return;
    case 'bad-text': // 22P02 invalid_text_representation
      await tx.execute(sql`insert into public.test_amounts (label, ref) values (${label}, ${'not-a-uuid'})`);
      return;
    case 'too-long': // 22001 string_data_right_truncation
      await tx.execute(sql`insert into public.test_amounts (label, note) values (${label}, ${'much too long'})`);
      return;
    case 'negative': // 23514 check_violation
      await tx.execute(sql`insert into public.test_amounts (label, amount) values (${label}, ${-5})`);
      return;
    case 'serialization': // 40001, as PostgreSQL raises it under serializable isolation
      await tx.execute(sql.raw(`do $$ begin raise exception 'could not serialize access' using errcode = '40001'; end $$`));
      return;
    case 'deadlock': // 40P01
      await tx.execute(sql.raw(`do $$ begin raise exception 'deadlock detected' using errcode = '40P01'; end $$`));
      return;
    case 'unique': // 23505: a row with this label was committed before
      await tx.execute(sql`insert into public.test_amounts (label) values (${label})`);
      return;
    default:
      await recordEffect(tx, label.replace(/:.*$/, ''), base);
  }
}

/** A processor over the real database (optionally with a batch handler); dead letters are collected. */
function processor(name: string, opts: { batch?: boolean } = {}) {
  const deadLetters: OutgoingMessage[] = [];
  const registry = new Registry();
  const label = (e: EventEnvelope) => `${name}:${(e.payload as LabelPayload).Label}`;
  const definition: ConsumerDefinition = {
    name,
    topic: 'pin.test.v1',
    groupId: name,
    eventTypes: ['E'],
    handle: async (e, tx) => write(tx, label(e)),
  };
  if (opts.batch) {
    definition.handleBatch = async (events, tx) => {
      for (const e of events) await write(tx, label(e));
    };
  }
  const p = createMessageProcessor(resolveConsumer(definition), {
    db: t.db,
    log: testLog,
    metrics: consumerMetrics(registry),
    publish: async (m) => void deadLetters.push(...m),
  });
  const dlq = () => deadLetters.map((m) => ({ code: String(m.headers['dlq-code']), reason: String(m.headers['dlq-reason']), id: String(m.headers['message-id']) }));
  return { p, dlq, registry };
}

/** The SQLSTATE of the PostgreSQL error in a cause chain. */
function sqlStateOf(err: unknown): string | undefined {
  for (let e: unknown = err; e instanceof Error; e = e.cause) if (e instanceof pg.DatabaseError) return e.code;
  return undefined;
}

/** Message ids must be unique per test: the inbox dedupes by them across processors of one name. */
const message = (name: string, label: string) => labelledMessage(label, { messageId: `${name}-${label}` });

describe('consumer runner: deterministic SQL data errors are poison', () => {
  for (const batch of [false, true]) {
    test(`a handler overflowing a bigint column (22003) dead-letters the message as CONSUMER_DATA_ERROR and the partition goes on${batch ? ' (batch handler: isolated by the fallback)' : ''}`, async () => {
      const name = batch ? 'overflow-batch' : 'overflow-single';
      const { p, dlq, registry } = processor(name, { batch });

      const result = await p.processBatch([message(name, 'before'), message(name, 'overflow'), message(name, 'after')]);

      assert.deepEqual(result, { done: 3 }, 'nothing left to retry');
      assert.deepEqual(await effects(t.pool, name), ['before', 'after']);
      const [letter, ...more] = dlq();
      assert.equal(more.length, 0);
      assert.equal(letter!.code, 'CONSUMER_DATA_ERROR');
      assert.equal(letter!.id, `${name}-overflow`);
      assert.match(letter!.reason, /SQLSTATE 22003/);
      assert.doesNotMatch(letter!.reason, new RegExp(HUGE), 'no payload value in the reason');
      assert.equal(await metricValue(registry, 'consumer_dlq_total', { code: 'CONSUMER_DATA_ERROR' }), 1);
      assert.equal(await metricValue(registry, 'consumer_messages_total', { outcome: 'handled' }), 2);
      const { rows } = await t.pool.query(`select count(*)::int as n from public.test_amounts where label like $1`, [`${name}:%`]);
      assert.equal(rows[0].n, 0);
    });
  }

  test('invalid text (22P02), a string too long (22001) and a check violation (23514) are dead-lettered the same way', async () => {
    const name = 'data-kinds';
    const { p, dlq } = processor(name);

    const result = await p.processBatch(['bad-text', 'ok-1', 'too-long', 'negative', 'ok-2'].map((l) => message(name, l)));

    assert.deepEqual(result, { done: 5 });
    assert.deepEqual(await effects(t.pool, name), ['ok-1', 'ok-2']);
    assert.deepEqual(
      dlq().map((d) => [d.code, d.reason.match(/SQLSTATE (\w+)/)?.[1]]),
      [
        ['CONSUMER_DATA_ERROR', '22P02'],
        ['CONSUMER_DATA_ERROR', '22001'],
        ['CONSUMER_DATA_ERROR', '23514'],
      ],
    );
    assert.match(dlq()[2]!.reason, /constraint test_amounts_nonneg/);
    assert.doesNotMatch(dlq()[0]!.reason, /not-a-uuid/);
    assert.doesNotMatch(dlq()[1]!.reason, /much too long/);
  });

  const retryable = { serialization: '40001', deadlock: '40P01', unique: '23505' } as const;
  for (const [kind, code] of Object.entries(retryable)) {
    test(`a ${kind} error (${code}) is still retried: the partition holds at that message, nothing is dead-lettered`, async () => {
      const name = `retry-${kind}`;
      if (kind === 'unique') await t.pool.query(`insert into public.test_amounts (label) values ($1)`, [`${name}:unique`]);
      const { p, dlq, registry } = processor(name);
      const batch = [message(name, 'first'), message(name, kind), message(name, 'last')];

      const result = await p.processBatch(batch);

      assert.equal(result.done, 1);
      assert.ok(result.error instanceof Error);
      assert.ok(!(result.error instanceof PoisonMessageError));
      assert.equal(sqlStateOf(result.error), code, 'the real PostgreSQL error of the handler');
      assert.deepEqual(dlq(), []);
      assert.deepEqual(await effects(t.pool, name), ['first']);
      assert.equal(await metricValue(registry, 'consumer_dlq_total'), 0);
      // And again on the retry: held, never skipped.
      assert.equal((await p.processBatch(batch.slice(1))).done, 0);
    });
  }
});

describe('deterministic SQL state rule', () => {
  const dbError = (code: string, constraint?: string) => Object.assign(new pg.DatabaseError('value "123" is out of range', 0, 'error'), { code, constraint });

  test('class 22 and 23514 anywhere in the cause chain; other codes and non-PostgreSQL errors are not', () => {
    const wrapped = (cause: unknown) => new Error('Failed query: insert …', { cause });
    assert.equal(deterministicSqlState(wrapped(dbError('22003'))), '22003');
    assert.equal(deterministicSqlState(dbError('22P02')), '22P02');
    assert.equal(deterministicSqlState(wrapped(wrapped(dbError('23514')))), '23514');
    for (const code of ['23505', '23503', '40001', '40P01', '57014', '08006', '25P02']) assert.equal(deterministicSqlState(wrapped(dbError(code))), undefined, code);
    assert.equal(deterministicSqlState(Object.assign(new Error('x'), { code: '22003' })), undefined, 'not a PostgreSQL error');
    assert.equal(deterministicSqlState('22003'), undefined);
  });

  test('as poison: stable code, SQLSTATE and constraint in the reason, not the driver message; declared poison and other errors pass through', () => {
    const poison = dataErrorAsPoison(new Error('wrapped', { cause: dbError('23514', 'chk_x') }));
    assert.ok(poison instanceof PoisonMessageError);
    assert.equal(poison.code, 'CONSUMER_DATA_ERROR');
    assert.match(poison.message, /SQLSTATE 23514 \(constraint chk_x\)/);
    assert.doesNotMatch(poison.message, /123/);
    const declared = new PoisonMessageError('OWN_CODE', 'mine');
    assert.equal(dataErrorAsPoison(declared), declared);
    const infra = dbError('40001');
    assert.equal(dataErrorAsPoison(infra), infra);
  });
});

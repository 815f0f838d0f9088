import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp } from '../../../support/app.ts';
import { createTestKafka } from '../../../support/kafka.ts';
import { logCapture } from '../../../support/logs.ts';
import { waitFor } from '../../../support/wait.ts';
import { newId } from '../../../../src/platform/time.ts';
import { TOPICS } from '../../../../src/event-topics.ts';
import messenger from '../../../../src/modules/messenger/index.ts';
import { nextPhone, replicaRow, simulateReplicaWriteOutage, userUpserted } from '../support/user-sync.ts';

/**
 * Seed 002's log lines that the consumer runner writes: skipped-duplicate (debug: on a replay it
 * fires for every message) and failed (warn: once per backoff delay) carry MessageId, UserId and
 * Version, and no personal data.
 */

const LEVEL = { debug: 20, warn: 40 };
const k = await createTestKafka();
const logs = logCapture('debug');
const { app, database } = await buildTestApp(
  { KAFKA_BROKERS: k.brokers.join(','), KAFKA_TOPIC_PREFIX: k.prefix, JOBS_ENABLED: 'true' },
  { modules: [messenger], logDestination: logs.stream, logLevel: 'debug' },
);
await app.platform.startBackground();
const pool = database.pool;
const topic = k.topic(TOPICS.identityUsers);
/** The first captured line matching, once there is one. */
async function lineWhere(what: string, match: (l: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> {
  await waitFor(what, () => logs.lines().some(match));
  return logs.lines().find(match)!;
}
const untilVersion = (userId: string, v: number) =>
  waitFor(`${userId} at version ${v}`, async () => Number((await replicaRow(pool, userId))?.identity_user_version ?? 0) === v);

describe('user sync log lines (real Kafka)', () => {
  after(() => app.close());

  test('skipped-duplicate: a redelivered MessageId logs MessageId, UserId and Version at debug', async () => {
    const userId = newId();
    const first = userUpserted(userId, { version: 1, phone: nextPhone(), firstName: 'Первый' });
    await k.produce(topic, [first]);
    await untilVersion(userId, 1);
    await k.produce(topic, [first]);
    const messageId = first.headers!['message-id'];
    const line = await lineWhere('the skipped-duplicate line', (l) => l.msg === 'skipped-duplicate' && l.messageId === messageId);
    assert.equal(line.level, LEVEL.debug);
    assert.equal(line.userId, userId);
    assert.equal(line.version, 1);
    assert.ok(!JSON.stringify(line).includes('Первый'), 'no name in the line');
  });

  test('failed: an infrastructure error that is retried logs MessageId, UserId and Version at warn, without row values', async () => {
    const userId = newId();
    const phone = nextPhone();
    const undo = await simulateReplicaWriteOutage(pool, 'test_fail_logs', `new.id = '${userId}'`);
    const msg = userUpserted(userId, { version: 7, phone, firstName: 'Сбойный' });
    try {
      await k.produce(topic, [msg]);
      const line = await lineWhere('the failed line', (l) => l.msg === 'failed' && l.userId === userId);
      assert.equal(line.level, LEVEL.warn);
      assert.equal(line.messageId, msg.headers!['message-id']);
      assert.equal(line.version, 7);
      assert.equal(line.attempt, 1);
      assert.equal(typeof line.delayMs, 'number');
      assert.match(String((line.err as { message?: string }).message), /SQLSTATE 55P03/);
      assert.ok(!logs.text().includes(phone) && !logs.text().includes('Сбойный'), 'no phone or name in the log');
    } finally {
      await undo();
    }
    await untilVersion(userId, 7);
  });
});

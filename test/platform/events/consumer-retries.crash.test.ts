import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createTestDatabase } from '../../support/db.ts';
import { testKafkaClient, createTestKafka } from '../../support/kafka.ts';
import { metricValue } from '../../support/metrics.ts';
import { waitFor } from '../../support/wait.ts';
import { createEffectsTable, effects, recordEffect, testLog } from './support.ts';
import { Registry } from '../../../src/platform/observability/metrics.ts';
import { envelopeToWire } from '../../../src/platform/events/envelope.ts';
import { createKafkaBus } from '../../../src/platform/events/kafka-bus.ts';
import { topicsToCreate } from '../../../src/platform/events/topics.ts';
import { newId } from '../../../src/platform/time.ts';

/**
 * A dead letter is written once: a consumer PROCESS SIGKILLed right after it dead-lettered a message whose
 * retries were exhausted, before the offset commit. The next member of the group gets the message
 * again and must see it as a duplicate (the inbox row written with the dead letter), not
 * retry it and dead-letter it a second time.
 */

const t = await createTestDatabase();
await createEffectsTable(t.pool);
const k = await createTestKafka();
const CHILD = fileURLToPath(new URL('./retries-child.ts', import.meta.url));
const TOPIC = 'pin.test.retries-crash.v1';
const CONSUMER = 'crash-retries';
const GROUP = 'crash-retries-group';
const MAX_ATTEMPTS = 3;

const bus = createKafkaBus({ client: testKafkaClient, brokers: k.brokers, clientId: 'retries-crash-test', log: testLog, consumerMaxAttempts: MAX_ATTEMPTS, consumerSessionTimeoutMs: 6000 });
await bus.start();
after(() => bus.stop());
await bus.ensureTopics(topicsToCreate([{ name: TOPIC, partitions: 1, consumed: true }], { prefix: k.prefix }));

const wire = (label: string) => ({
  partition: 0,
  ...envelopeToWire({ messageId: newId(), topic: TOPIC, key: 'k', eventType: 'E', contractVersion: 1, aggregateType: 'A', aggregateId: 'k', occurredAt: new Date().toISOString(), payload: { Label: label } }),
});

/** Runs the child consumer until it has dead-lettered (and frozen), then SIGKILLs it. */
async function runChildUntilDeadLettered(): Promise<void> {
  const child = spawn(process.execPath, [CHILD], {
    env: {
      ...process.env,
      CHILD_DB_URL: t.url,
      CHILD_TOPIC: TOPIC,
      CHILD_PREFIX: k.prefix,
      CHILD_CONSUMER: CONSUMER,
      CHILD_GROUP: GROUP,
      CHILD_MAX_ATTEMPTS: String(MAX_ATTEMPTS),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('DEAD_LETTERED')) resolve();
    });
    child.on('exit', () => reject(new Error(`child exited before dead-lettering: ${out}`)));
    setTimeout(() => reject(new Error(`child did not dead-letter in time: ${out}`)), 30_000).unref();
  });
  child.kill('SIGKILL');
  assert.equal(await exited, 'SIGKILL');
}

const committedOffset = async () => {
  const [offsets] = await k.admin.fetchOffsets({ groupId: `${k.prefix}${GROUP}`, topics: [k.topic(TOPIC)] });
  return Number(offsets!.partitions.find((p) => p.partition === 0)!.offset);
};

describe('consumer runner: a crash between dead-lettering and the offset commit', () => {
  test('a consumer process SIGKILLed right after dead-lettering an exhausted message: the next member sees a duplicate, the DLQ holds one copy, the partition moves on', async () => {
    await k.produce(k.topic(TOPIC), [wire('before'), wire('bad')]);

    await runChildUntilDeadLettered();

    const dlq = `${k.topic(TOPIC)}.dlq`;
    const [letter] = await k.readTopic(dlq, { atLeast: 1 });
    assert.deepEqual([letter!.headers['dlq-code'], letter!.headers['dlq-error-class'], letter!.headers['dlq-origin-offset']], ['CONSUMER_RETRIES_EXHAUSTED', 'TypeError', '1']);
    assert.ok((await committedOffset()) <= 1, 'the kill came before the offset of the dead-lettered message was committed');
    assert.deepEqual(await effects(t.pool, CONSUMER), ['before']);

    // A new member of the group (after the dead member's session expires) resumes from the committed offset.
    await k.produce(k.topic(TOPIC), [wire('after')]);
    const registry = new Registry();
    const handle = await bus.subscribe(
      {
        name: CONSUMER,
        topic: TOPIC,
        groupId: GROUP,
        eventTypes: ['E'],
        backoff: { baseMs: 20, factor: 2, capMs: 100, jitter: 0 },
        handle: async (e, tx) => {
          const label = (e.payload as { Label: string }).Label;
          if (label === 'bad') (null as unknown as { run(): void }).run();
          await recordEffect(tx, CONSUMER, label);
        },
      },
      { db: t.db, log: testLog, registry, topicPrefix: k.prefix },
    );
    after(() => handle.stop());

    await waitFor('the message after the dead-lettered one handled', async () => (await effects(t.pool, CONSUMER)).length === 2, 60_000);
    assert.deepEqual(await effects(t.pool, CONSUMER), ['before', 'after']);
    assert.equal((await k.readTopic(dlq)).length, 1, 'dead-lettered once, not again after the crash');
    assert.equal(await metricValue(registry, 'consumer_messages_total', { outcome: 'duplicate' }), 1, 'the redelivered message is a duplicate');
    assert.equal(await metricValue(registry, 'consumer_messages_total', { outcome: 'retried' }), 0, 'and its handler did not run again');
    assert.equal(await metricValue(registry, 'consumer_dlq_total'), 0);
    await waitFor('offset committed past all three', async () => (await committedOffset()) === 3);
  });
});

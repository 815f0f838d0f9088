import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp } from '../../support/app.ts';
import { defineModule } from '../../../src/platform/module.ts';
import { testKafkaClient, createTestKafka, kafkaSaslBroker } from '../../support/kafka.ts';
import { logCapture } from '../../support/logs.ts';
import { waitFor } from '../../support/wait.ts';
import { createEffectsTable, effects, recordEffect, testLog } from './support.ts';
import { defineConsumer, type ConsumerDefinition } from '../../../src/platform/events/bus.ts';
import { PoisonMessageError } from '../../../src/platform/events/errors.ts';
import { createKafkaBus } from '../../../src/platform/events/kafka-bus.ts';
import { kafkaSecurity } from '../../../src/platform/events/kafka-security.ts';
import { enqueue } from '../../../src/platform/outbox/index.ts';
import { orderEvent } from '../outbox/support.ts';

/**
 * The app on the local broker's SASL_PLAINTEXT listener (scripts/kafka.sh: SCRAM-SHA-256/512 and
 * PLAIN, KAFKA_SASL_BROKERS): producer, consumer and dead-lettering go through it with the
 * KAFKA_SASL_* settings, and a wrong password leaves the replica unready with one clear error.
 */

const sasl = kafkaSaslBroker();
// The test's own client on the same listener (SCRAM-SHA-512; the app uses SCRAM-SHA-256).
const k = await createTestKafka({ brokers: sasl.brokers, sasl: { mechanism: 'scram-sha-512', username: sasl.username, password: sasl.password } });
const TOPIC = 'pin.test.sasl.v1';
await k.createTopics([
  { name: TOPIC, partitions: 1 },
  { name: `${TOPIC}.dlq`, partitions: 1 },
]);

const saslEnv = (password: string) => ({
  KAFKA_BROKERS: sasl.brokers.join(','),
  KAFKA_TOPIC_PREFIX: k.prefix,
  KAFKA_SASL_MECHANISM: 'scram-sha-256',
  KAFKA_SASL_USERNAME: sasl.username,
  KAFKA_SASL_PASSWORD: password,
  JOBS_ENABLED: 'true',
  OUTBOX_POLLING_INTERVAL: '200ms',
});

/** Records each order's Seq in its transaction; `Poison: true` can never succeed (→ DLQ). */
const consumer: ConsumerDefinition<{ Seq: number; Poison?: boolean }> = defineConsumer({
  name: 'sasl-test',
  topic: TOPIC,
  groupId: 'sasl-test',
  eventTypes: ['OrderChangedKafkaEvent'],
  async handle(event, tx) {
    if (event.payload.Poison) throw new PoisonMessageError('TEST_POISON', `order ${event.payload.Seq} is poison`);
    await recordEffect(tx, 'sasl-test', String(event.payload.Seq));
  },
});

describe('kafka over SASL (SCRAM)', () => {
  test('each mechanism of the listener authenticates the bus (plain, scram-sha-256, scram-sha-512)', async () => {
    for (const mechanism of ['plain', 'scram-sha-256', 'scram-sha-512'] as const) {
      const security = kafkaSecurity({ KAFKA_SASL_MECHANISM: mechanism, KAFKA_SASL_USERNAME: sasl.username, KAFKA_SASL_PASSWORD: sasl.password });
      const bus = createKafkaBus({ client: testKafkaClient, brokers: sasl.brokers, clientId: 'sasl-test', log: testLog, security, healthTimeoutMs: 10_000 });
      try {
        assert.equal(await bus.health(), 'ok', mechanism);
        assert.equal(bus.credentialsRefused(), undefined, mechanism);
      } finally {
        await bus.stop();
      }
    }
  });

  test('outbox publisher → consumer, and a poison message to the DLQ, all through the SASL listener', async () => {
    const { app, database } = await buildTestApp(saslEnv(sasl.password), { modules: [defineModule({}, () => ({ name: 'sasl-test', consumers: [consumer] }))] });
    await createEffectsTable(database.pool);
    await app.platform.startBackground();

    await database.db.transaction((tx) =>
      enqueue(tx, [orderEvent(TOPIC, 'k', 1), orderEvent(TOPIC, 'k', 2, { Poison: true }), orderEvent(TOPIC, 'k', 3)]),
    );
    await waitFor('the consumer to handle both good orders', async () => (await effects(database.pool, 'sasl-test')).length >= 2, 60_000);
    assert.deepEqual(await effects(database.pool, 'sasl-test'), ['1', '3']);

    const [dead, ...more] = await k.readTopic(k.topic(`${TOPIC}.dlq`), { atLeast: 1, timeoutMs: 30_000 });
    assert.equal(more.length, 0);
    assert.equal(dead!.headers['dlq-code'], 'TEST_POISON');
    assert.equal(dead!.headers['dlq-origin-topic'], k.topic(TOPIC));
    assert.equal(JSON.parse(dead!.value!.toString()).Seq, 2);

    const ready = await app.inject({ method: 'GET', url: '/health/ready' });
    assert.equal(ready.statusCode, 200, ready.body);
    assert.equal(ready.json().dependencies.eventBus, 'ok');
    assert.equal(app.platform.bus.credentialsRefused(), undefined);
  });

  test('a wrong password: one error naming the SASL settings (never the password), /health/ready 503, the replica keeps running', async () => {
    const wrong = 'not-the-password-4f1c';
    const logs = logCapture('info');
    const { app } = await buildTestApp(saslEnv(wrong), { logDestination: logs.stream, logLevel: 'info', modules: [] });
    await app.platform.startBackground(); // the bus start fails and is retried in the background

    await waitFor('the refusal to be logged', () => logs.lines().some((l) => String(l.msg).startsWith('kafka refused this replica')), 30_000);
    const refusal = logs.lines().find((l) => String(l.msg).startsWith('kafka refused this replica'))!;
    assert.equal(refusal.level, 50, 'logged as an error');
    assert.equal(refusal.saslMechanism, 'scram-sha-256');
    assert.equal(refusal.saslUsername, sasl.username);
    assert.match(String(refusal.msg), /KAFKA_SASL_PASSWORD/);
    assert.match(JSON.stringify(refusal.err), /authentication failed/i);
    assert.ok(logs.lines().some((l) => l.msg === 'event bus start failed; outbox rows wait, consumers start when it is back'));
    // kafkajs says "SASL SCRAM SHA256 authentication failed", @platformatic/kafka "SASL authentication failed."
    assert.match(app.platform.bus.credentialsRefused() ?? '', /SASL.*authentication failed/i);

    const ready = await app.inject({ method: 'GET', url: '/health/ready' });
    assert.equal(ready.statusCode, 503, ready.body);
    assert.deepEqual(ready.json(), { status: 'unready', dependencies: { database: 'ok', eventBus: 'down', backplane: 'disabled' } });
    const metrics = await app.inject({ method: 'GET', url: '/metrics' });
    assert.match(metrics.body, /health_dependency_up\{dependency="eventBus",required="true"\} 0/);
    assert.equal(logs.lines().filter((l) => String(l.msg).startsWith('kafka refused this replica')).length, 1, 'once, not per health check');
    assert.ok(!logs.text().includes(wrong), 'the password is never logged');
  });
});

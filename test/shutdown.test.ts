import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { createTestDatabase } from './support/db.ts';
import { createTestKafka } from './support/kafka.ts';
import { SECURE_SECRETS } from './support/secure-env.ts';
import { waitFor } from './support/wait.ts';

const TOTAL = 60_000;
const TOPIC = 'pin.identity.access.v1';

/** The service as a child process (its log captured), as an orchestrator would run it. */
function startService(env: Record<string, string>) {
  const child = spawn(process.execPath, ['src/main.ts'], {
    // On a real database (DATABASE_URL) the service refuses the shipped secrets.
    env: { ...process.env, PORT: '0', SHUTDOWN_TIMEOUT_MS: '10000', LOG_LEVEL: 'info', ...SECURE_SECRETS, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const log = { text: '' };
  child.stdout.on('data', (c) => (log.text += c));
  child.stderr.on('data', (c) => (log.text += c));
  return { child, log, exited: once(child, 'exit') };
}

test('SIGTERM during an outbox publisher run: exit 0 before the hard stop, committed progress kept', async () => {
  const database = await createTestDatabase();
  const kafka = await createTestKafka();
  // A backlog big enough that the publisher is still mid-run when the signal arrives.
  await database.pool.query(
    `insert into platform.outbox (id, topic, key, event_type, aggregate_type, aggregate_id, occurred_at, payload)
     select gen_random_uuid(), $1, md5(i::text), 'UserAccessChangedKafkaEvent', 'User', md5(i::text), now(),
            jsonb_build_object('N', i, 'Pad', repeat('x', 200))
     from generate_series(1, $2) i`,
    [TOPIC, TOTAL],
  );
  const published = async () =>
    (await database.pool.query<{ n: number }>('select count(*)::int as n from platform.outbox where published_at is not null')).rows[0]!.n;

  const { child, log, exited } = startService({
    DATABASE_URL: database.url,
    KAFKA_BROKERS: kafka.brokers.join(','),
    KAFKA_TOPIC_PREFIX: kafka.prefix,
    OUTBOX_BATCH_SIZE: '100',
    OUTBOX_MAX_RUN_MS: '600000',
  });

  await waitFor('the publisher to commit its first batch', async () => (await published()) > 0, 60_000);
  const before = await published();
  child.kill('SIGTERM');
  const [code] = (await exited) as [number | null];

  // Exit code 0 means it finished before SHUTDOWN_TIMEOUT_MS (the hard stop exits 1).
  assert.equal(code, 0, log.text.slice(-3000));
  assert.match(log.text, /"msg":"stopped"/);
  const after = await published();
  assert.ok(after >= before, 'rows marked published before the signal stay published');
  assert.ok(after < TOTAL, 'the run was interrupted, not finished');
  // Everything marked published really reached Kafka (at-least-once: maybe a few more).
  const offsets = await kafka.admin.fetchTopicOffsets(kafka.topic(TOPIC));
  const inKafka = offsets.reduce((n, p) => n + Number(p.high) - Number(p.low), 0);
  assert.ok(inKafka >= after, `${inKafka} messages in Kafka, ${after} rows marked published`);
});

test('SIGTERM while start-up waits for a silent Kafka: the graceful path runs and the process exits 0', async () => {
  const database = await createTestDatabase();
  // A "broker" that accepts connections and never answers: start-up hangs in startBackground
  // (the event bus's first request) for as long as the test wants.
  const sockets = new Set<Socket>();
  const silentBroker = createServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => silentBroker.listen(0, '127.0.0.1', resolve));
  const { port } = silentBroker.address() as AddressInfo;

  const { child, log, exited } = startService({ DATABASE_URL: database.url, KAFKA_BROKERS: `127.0.0.1:${port}` });
  try {
    await waitFor('the service to reach for Kafka at start', () => sockets.size > 0, 60_000);
    assert.doesNotMatch(log.text, /kafka event bus started|job runner started/, 'still starting');

    child.kill('SIGTERM');
    const gone = () => child.exitCode !== null || child.signalCode !== null;
    await waitFor('the signal to be handled', () => /"msg":"shutting down"/.test(log.text) || gone(), 10_000);
    // The broker stays silent: stopping must not wait out the bus's pending connect.
    const [code, signal] = (await exited) as [number | null, NodeJS.Signals | null];

    // Killed by the signal (no handler yet) = code null, signal SIGTERM; the hard stop exits 1.
    assert.deepEqual([code, signal], [0, null], log.text.slice(-3000));
    assert.match(log.text, /"msg":"stopped"/);
  } finally {
    silentBroker.close();
    for (const s of sockets) s.destroy();
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
});

import { writeSync } from 'node:fs';
import { sql } from 'drizzle-orm';
import { createDb, createPool } from '../../../src/platform/db/index.ts';
import { createKafkaBus } from '../../../src/platform/events/kafka-bus.ts';
import { testKafkaClient } from '../../support/kafka-client.ts';
import { createLogger } from '../../../src/platform/observability/logger.ts';
import { Registry } from '../../../src/platform/observability/metrics.ts';

/**
 * A consumer process for consumer-retries.crash.test.ts. Its handler throws a TypeError on the
 * message labelled `bad`. The moment the runner logs "message dead-lettered" (after whatever it
 * does to dead-letter, before the offset commit that follows) the process freezes its event loop
 * and prints DEAD_LETTERED, so the parent's SIGKILL lands exactly in that window.
 */
const env = (name: string): string => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is unset`);
  return v;
};

const log = createLogger('warn', {
  write(line: string) {
    if ((JSON.parse(line) as { msg?: string }).msg !== 'message dead-lettered') return;
    writeSync(1, 'DEAD_LETTERED\n');
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0); // until SIGKILL
  },
});
const pool = createPool(env('CHILD_DB_URL'), 2);
const bus = createKafkaBus({ client: testKafkaClient,
  brokers: env('KAFKA_BROKERS').split(','),
  clientId: 'retries-child',
  log,
  consumerMaxAttempts: Number(env('CHILD_MAX_ATTEMPTS')),
  consumerSessionTimeoutMs: 6000,
});
await bus.start();
await bus.subscribe(
  {
    name: env('CHILD_CONSUMER'),
    topic: env('CHILD_TOPIC'),
    groupId: env('CHILD_GROUP'),
    eventTypes: ['E'],
    backoff: { baseMs: 20, factor: 2, capMs: 100, jitter: 0 },
    handle: async (e, tx) => {
      const label = (e.payload as { Label: string }).Label;
      if (label === 'bad') (null as unknown as { run(): void }).run();
      await tx.execute(sql`insert into public.test_effects (consumer, label) values (${env('CHILD_CONSUMER')}, ${label})`);
    },
  },
  { db: createDb(pool), log, registry: new Registry(), topicPrefix: env('CHILD_PREFIX') },
);
writeSync(1, 'READY\n');

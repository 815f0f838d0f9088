import { writeSync } from 'node:fs';
import { sql } from 'drizzle-orm';
import { createDb, createPool } from '../../../src/platform/db/index.ts';
import { createKafkaBus } from '../../../src/platform/events/kafka-bus.ts';
import { createLogger } from '../../../src/platform/observability/logger.ts';
import { Registry } from '../../../src/platform/observability/metrics.ts';
import { testKafkaClient } from '../../support/kafka-client.ts';

/**
 * One member of a consumer group for group-member.faults.test.ts, on the client KAFKA_CLIENT names:
 * each message it handles is a row (member, key, seq) written in the handler's transaction, with
 * the inbox's, so a redelivery is a skip and the rows are exactly what took effect, in commit order.
 * Its log goes to stderr; READY on stdout once it subscribed.
 */
const env = (name: string): string => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is unset`);
  return v;
};
const member = env('MEMBER_NAME');
const log = createLogger(process.env.MEMBER_LOG_LEVEL ?? 'warn', { write: (line: string) => void writeSync(2, line) });
const pool = createPool(env('MEMBER_DB_URL'), 4);
const bus = createKafkaBus({ client: testKafkaClient, brokers: env('KAFKA_BROKERS').split(','), clientId: `member-${member}`, log, consumerSessionTimeoutMs: 6000 });
await bus.start();
await bus.subscribe(
  {
    name: 'group-member',
    topic: env('MEMBER_TOPIC'),
    groupId: 'group-member',
    eventTypes: ['E'],
    partitionsConcurrently: 3,
    backoff: { baseMs: 50, factor: 2, capMs: 500, jitter: 0 },
    handle: async (e, tx) => {
      const { Seq } = e.payload as { Seq: number };
      await tx.execute(sql`insert into public.member_effects (member, key, seq) values (${member}, ${e.key ?? ''}, ${Seq})`);
    },
  },
  { db: createDb(pool), log, registry: new Registry(), topicPrefix: env('MEMBER_PREFIX') },
);
writeSync(1, 'READY\n');

/**
 * Does a read-committed consumer see exactly the committed records when one fetch spans several
 * aborted transactions of one producer? `node scripts/kafka-read-committed.ts` (needs KAFKA_BROKERS,
 * e.g. `eval "$(bash scripts/services.sh up)"` first) writes seven transactions of 10 records to a
 * fresh one-partition topic with one transactional producer, committing and aborting in turn (40
 * committed), then reads the topic from the start with each Kafka client's read-committed consumer
 * and prints one JSON line per client: `delivered` should equal `committed`, `abortedDelivered` be 0.
 * @platformatic/kafka 2.12.1 delivers 60 (docs/architecture.md, "Kafka client": why kafkajs stays
 * the default); run this against a newer release before trying the switch again.
 */
import { randomBytes } from 'node:crypto';
import { Consumer } from '@platformatic/kafka';
import { Kafka, logLevel } from 'kafkajs';

const brokers = (process.env.KAFKA_BROKERS ?? '').split(',').filter(Boolean);
if (brokers.length === 0) {
  process.stderr.write('KAFKA_BROKERS is unset: eval "$(bash scripts/services.sh up)" first\n');
  process.exit(2);
}
const PATTERN = 'CACACAC';
const PER_TRANSACTION = 10;
const QUIET_MS = 2000;
const run = randomBytes(4).toString('hex');
const topic = `read-committed-check-${run}`;
const kafka = new Kafka({ clientId: 'read-committed-check', brokers, logLevel: logLevel.NOTHING });
const admin = kafka.admin();
await admin.connect();
await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });

const committed = new Set<string>();
const producer = kafka.producer({ transactionalId: `read-committed-check-${run}`, idempotent: true, maxInFlightRequests: 1 });
await producer.connect();
let n = 0;
for (const step of PATTERN) {
  const tx = await producer.transaction();
  const values = Array.from({ length: PER_TRANSACTION }, () => `${step}${n++}`);
  await tx.send({ topic, messages: values.map((value) => ({ value })) });
  if (step === 'C') {
    await tx.commit();
    for (const v of values) committed.add(v);
  } else await tx.abort();
}
await producer.disconnect();

/** Resolves once no record has arrived for QUIET_MS (at least one wait). */
async function quiet(count: () => number): Promise<void> {
  for (let last = -1; last !== count(); ) {
    last = count();
    await new Promise((r) => setTimeout(r, QUIET_MS));
  }
}

function report(client: string, seen: string[]): void {
  const line = {
    client,
    committed: committed.size,
    delivered: seen.length,
    abortedDelivered: seen.filter((v) => !committed.has(v)).length,
    committedMissing: [...committed].filter((v) => !seen.includes(v)).length,
  };
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

const viaKafkajs: string[] = [];
const kc = kafka.consumer({ groupId: `read-committed-check-${run}-kafkajs`, readUncommitted: false });
await kc.connect();
await kc.subscribe({ topic, fromBeginning: true });
await kc.run({ eachMessage: async ({ message }) => void viaKafkajs.push(message.value?.toString() ?? '') });
await quiet(() => viaKafkajs.length);
await kc.disconnect();
report('kafkajs', viaKafkajs);

const viaPlatformatic: string[] = [];
const pc = new Consumer({ clientId: 'read-committed-check', bootstrapBrokers: brokers, groupId: `read-committed-check-${run}-platformatic`, autocommit: false, maxWaitTime: 200 });
const stream = await pc.consume({ topics: [topic], mode: 'earliest', autocommit: false });
stream.on('data', (m: { value?: Buffer }) => void viaPlatformatic.push(m.value?.toString() ?? ''));
await quiet(() => viaPlatformatic.length);
await stream.close();
await pc.close(true);
report('@platformatic/kafka', viaPlatformatic);

await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
await admin.disconnect();

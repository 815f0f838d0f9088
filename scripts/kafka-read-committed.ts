/**
 * Does a read-committed consumer see exactly the committed records when one fetch spans several
 * aborted transactions of one producer? `node scripts/kafka-read-committed.ts` (needs KAFKA_BROKERS,
 * e.g. `eval "$(bash scripts/services.sh up)"` first) writes seven transactions of 10 records (two
 * sends, so two record batches each) to a fresh one-partition topic with one transactional producer,
 * committing and aborting in turn (40 committed), then reads the topic from the start with each Kafka
 * client's read-committed consumer, once with the default fetch size (one fetch spans every
 * transaction) and once with a one-byte fetch (the broker then returns one batch per fetch, so an
 * aborted batch arrives without its abort marker), and prints one JSON line per client and fetch size:
 * `delivered` should equal `committed`, `abortedDelivered` and `committedMissing` be 0.
 * @platformatic/kafka 2.12.1 as published delivers 60 and 40 (20 aborted each time): its filter keeps
 * one aborted range per producer per fetch and lets a range without its marker through; the fix is
 * patches/@platformatic+kafka+2.12.1.patch (docs/architecture.md, "Kafka client").
 * test/platform/events/kafka-read-committed.test.ts runs this and checks every line.
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
const QUIET_MS = 1000;
const FIRST_RECORD_MS = 30_000;
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
  const half = PER_TRANSACTION / 2;
  await tx.send({ topic, messages: values.slice(0, half).map((value) => ({ value })) });
  await tx.send({ topic, messages: values.slice(half).map((value) => ({ value })) });
  if (step === 'C') {
    await tx.commit();
    for (const v of values) committed.add(v);
  } else await tx.abort();
}
await producer.disconnect();

/** Resolves once records arrived (a fresh group's join takes a while) and none came for QUIET_MS. */
async function quiet(count: () => number): Promise<void> {
  for (const until = Date.now() + FIRST_RECORD_MS; count() === 0 && Date.now() < until; ) await new Promise((r) => setTimeout(r, 50));
  for (let last = -1; last !== count(); ) {
    last = count();
    await new Promise((r) => setTimeout(r, QUIET_MS));
  }
}

function report(client: string, fetch: 'default' | 'one batch', seen: string[]): void {
  const line = {
    client,
    fetch,
    committed: committed.size,
    delivered: seen.length,
    abortedDelivered: seen.filter((v) => !committed.has(v)).length,
    committedMissing: [...committed].filter((v) => !seen.includes(v)).length,
  };
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

/** A byte limit of 1 still returns one whole batch per fetch (the broker always returns the first). */
const fetchBytes = (fetch: 'default' | 'one batch') => (fetch === 'one batch' ? { maxBytes: 1, maxBytesPerPartition: 1 } : {});

for (const fetch of ['default', 'one batch'] as const) {
  const tag = fetch === 'default' ? 'default' : 'small';
  const viaKafkajs: string[] = [];
  const kc = kafka.consumer({ groupId: `read-committed-check-${run}-kafkajs-${tag}`, readUncommitted: false, ...fetchBytes(fetch) });
  await kc.connect();
  await kc.subscribe({ topic, fromBeginning: true });
  await kc.run({ eachMessage: async ({ message }) => void viaKafkajs.push(message.value?.toString() ?? '') });
  await quiet(() => viaKafkajs.length);
  await kc.disconnect();
  report('kafkajs', fetch, viaKafkajs);

  const viaPlatformatic: string[] = [];
  const pc = new Consumer({
    clientId: 'read-committed-check',
    bootstrapBrokers: brokers,
    groupId: `read-committed-check-${run}-platformatic-${tag}`,
    autocommit: false,
    maxWaitTime: 200,
    ...fetchBytes(fetch),
  });
  const stream = await pc.consume({ topics: [topic], mode: 'earliest', autocommit: false });
  stream.on('data', (m: { value?: Buffer }) => void viaPlatformatic.push(m.value?.toString() ?? ''));
  await quiet(() => viaPlatformatic.length);
  await stream.close();
  await pc.close(true);
  report('@platformatic/kafka', fetch, viaPlatformatic);
}

await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
await admin.disconnect();

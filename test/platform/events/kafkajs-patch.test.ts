/**
 * kafkajs 2.2.4 is unmaintained upstream; patches/kafkajs+2.2.4.patch (applied by `postinstall`)
 * speeds up its producer encoding and its consumer's record decoding (headers), keeps a transactional producer's coordinator, and lets a
 * restarted consumer rejoin under its member id (proven by the Kafka outage fault scenario). These tests prove the patch is applied and that the patched
 * pieces produce exactly the bytes the original ones did, so the broker tests stay meaningful.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { promisify } from 'node:util';
import { createTestKafka } from '../../support/kafka.ts';

const require = createRequire(import.meta.url);
const kafkajsDir = require.resolve('kafkajs').replace(/index\.js$/, '');
type Crc = (b: Buffer) => number;
const patchedCrc = require(`${kafkajsDir}src/protocol/recordBatch/crc32C/index.js`) as Crc;
// The package's own byte-at-a-time implementation, kept in the package, is the reference.
const referenceCrc = require(`${kafkajsDir}src/protocol/recordBatch/crc32C/crc32C.js`) as Crc;
const Encoder = require(`${kafkajsDir}src/protocol/encoder.js`) as new () => { writeVarInt(v: number): { buffer: Buffer }; writeUVarInt(v: number): { buffer: Buffer } };
const Decoder = require(`${kafkajsDir}src/protocol/decoder.js`) as new (b: Buffer) => { readVarInt(): number; readUVarInt(): number; offset: number };

test('postinstall applied the kafkajs patch (record batch CRC comes from crc-32)', () => {
  const source = readFileSync(`${kafkajsDir}src/protocol/recordBatch/crc32C/index.js`, 'utf8');
  assert.match(source, /require\('crc-32\/crc32c'\)/);
});

test('postinstall applied the kafkajs patch (a restarted consumer rejoins under its member id)', () => {
  const source = readFileSync(`${kafkajsDir}src/consumer/index.js`, 'utf8');
  assert.match(source, /consumerGroup\.memberId = memberIdToRejoin/);
});

test('postinstall applied the kafkajs patch (AddPartitionsToTxn refused while the last commit completes is retried in place)', () => {
  const source = readFileSync(`${kafkajsDir}src/producer/eosManager/index.js`, 'utf8');
  assert.match(source, /await retryWhileConcurrent\(\(\) =>\s+broker\.addPartitionsToTxn/);
});

test('patched varlong writer: small numbers take a number path whose bytes the kafkajs decoder reads back, as before for Longs', () => {
  type VarLong = { writeVarLong(v: number): { buffer: Buffer } };
  const E = Encoder as unknown as (new () => VarLong) & { sizeOfVarLong(v: number): number };
  const D = Decoder as unknown as new (b: Buffer) => { readVarLong(): { toString(): string } };
  const values = [0, 1, -1, 63, -64, 64, -65, 8191, 8192, -8193, 2 ** 30, 2 ** 31 - 1, -(2 ** 31), 2 ** 31, 1e12, -1e12];
  for (const value of values) {
    const bytes = new E().writeVarLong(value).buffer;
    assert.equal(new D(bytes).readVarLong().toString(), String(value), `varlong ${value}`);
    assert.equal(E.sizeOfVarLong(value), bytes.length, `size of varlong ${value}`);
  }
});

test('patched encoder: large writes kept as segments give the bytes a copy would (joined once, size counted whole)', () => {
  type Enc = { writeInt32(v: number): Enc; writeBytes(b: Buffer): Enc; writeEncoder(e: Enc): Enc; writeEncoderArray(e: Enc[]): Enc; buffer: Buffer; size(): number };
  const E = Encoder as unknown as new () => Enc;
  const big = randomBytes(40_000);
  const bigger = randomBytes(70_000);
  const small = randomBytes(100);
  const int = (v: number) => {
    const b = Buffer.alloc(4);
    b.writeInt32BE(v);
    return b;
  };
  const inner = new E().writeInt32(1).writeBytes(big).writeInt32(2);
  const items = [new E().writeBytes(small), new E().writeBytes(bigger), new E().writeInt32(3)];
  const outer = new E().writeInt32(inner.size()).writeEncoder(inner).writeEncoderArray(items).writeInt32(4);
  const expected = Buffer.concat([
    int(4 + 4 + big.length + 4), int(1), int(big.length), big, int(2),
    int(small.length), small, int(bigger.length), bigger, int(3), int(4),
  ]);
  assert.equal(outer.size(), expected.length);
  assert.ok(outer.buffer.equals(expected));
  assert.ok(outer.buffer.equals(expected), 'read twice, the same bytes');
});

test('patched CRC32C gives the standard check value and matches the original on every length', () => {
  assert.equal(patchedCrc(Buffer.from('123456789')), 0xe3069283);
  for (const length of [0, 1, 3, 7, 8, 15, 16, 17, 31, 33, 1024, 4099, 100_003]) {
    const buffer = randomBytes(length);
    assert.equal(patchedCrc(buffer), referenceCrc(buffer), `length ${length}`);
  }
});

test('patched varint writers produce bytes the kafkajs decoder reads back unchanged', () => {
  const signed = [0, 1, -1, 63, -64, 64, -65, 127, 128, 300, 8191, 8192, 2 ** 20, 2 ** 31 - 1, -(2 ** 31)];
  for (const value of signed) {
    const bytes = new Encoder().writeVarInt(value).buffer;
    assert.equal(new Decoder(bytes).readVarInt(), value, `varint ${value}`);
  }
  for (const value of [0, 1, 127, 128, 16383, 16384, 2 ** 28, 2 ** 31, 2 ** 32 - 1]) {
    const bytes = new Encoder().writeUVarInt(value).buffer;
    assert.equal(new Decoder(bytes).readUVarInt(), value, `uvarint ${value}`);
    assert.ok(bytes.length <= 5);
  }
});

type RecordFn = (r: { offsetDelta?: number; timestampDelta?: number; key: string | Buffer | null; value: string | Buffer | null; headers?: Record<string, string | Buffer | string[]> }) => { buffer: Buffer };
const Record = require(`${kafkajsDir}src/protocol/recordBatch/record/v0/index.js`) as RecordFn;
const RecordDecoder = require(`${kafkajsDir}src/protocol/recordBatch/record/v0/decoder.js`) as (
  d: InstanceType<typeof Decoder>,
  ctx: { firstOffset: string; firstTimestamp: string },
) => { key: Buffer | null; value: Buffer | null; headers: Record<string, Buffer | Buffer[]>; offset: string; timestamp: string };

test('a record encoded with headers in place decodes to the same key, value, headers and deltas', () => {
  const value = Buffer.from('x'.repeat(1500));
  const encoded = Record({
    offsetDelta: 1999,
    timestampDelta: 1234,
    key: 'agg-é',
    value,
    headers: { 'x-message-id': '0190', 'x-event-type': Buffer.from('BenchEvent'), repeated: ['a', 'b'] },
  }).buffer;
  const decoder = new Decoder(encoded);
  const length = decoder.readVarInt();
  assert.equal(length, encoded.length - decoder.offset, 'the length prefix covers the body exactly');
  const record = RecordDecoder(decoder, { firstOffset: '100', firstTimestamp: '1000' });
  assert.equal(record.offset, '2099');
  assert.equal(record.timestamp, '2234');
  assert.equal(record.key?.toString(), 'agg-é');
  assert.ok(record.value?.equals(value));
  assert.equal(record.headers['x-message-id']?.toString(), '0190');
  assert.equal(record.headers['x-event-type']?.toString(), 'BenchEvent');
  assert.deepEqual((record.headers.repeated as Buffer[]).map(String), ['a', 'b']);
});

test('the patched record decoder builds the headers object exactly as the original fold did', () => {
  const source = readFileSync(`${kafkajsDir}src/protocol/recordBatch/record/v0/decoder.js`, 'utf8');
  assert.doesNotMatch(source, /\.\.\.obj/, 'postinstall applied the patch (no object spread per header)');
  // The original's fold over the header pairs, the reference (quirks included: a key named like an
  // Object.prototype member starts from that member).
  type Pair = { key: string; value: Buffer };
  type Folded = Record<string, unknown>;
  const reference = (pairs: Pair[]) =>
    pairs.reduce<Folded>((obj, { key, value }) => {
      const known = obj[key];
      return { ...obj, [key]: known === undefined ? value : Array.isArray(known) ? known.concat([value]) : [known, value] };
    }, {});
  // An own "__proto__" key only JSON.parse makes; repeated keys, one under an Object.prototype name.
  const headers = JSON.parse('{"message-id":"m1","repeated":["a","b","c"],"constructor":"c","__proto__":"p","last":"z"}') as Record<string, string | string[]>;
  const pairs = Object.keys(headers).flatMap((key) => [headers[key]!].flat().map((v) => ({ key, value: Buffer.from(v) })));
  const decoder = new Decoder(Record({ key: 'k', value: 'v', headers }).buffer);
  decoder.readVarInt();
  const decoded = RecordDecoder(decoder, { firstOffset: '0', firstTimestamp: '0' }).headers as unknown as Folded;
  assert.deepStrictEqual(decoded, reference(pairs));
  assert.deepEqual(Object.keys(decoded), ['message-id', 'repeated', 'constructor', '__proto__', 'last']);
  assert.equal(Object.getPrototypeOf(decoded), Object.prototype);
});

test('messages are grouped per partition in their original order', () => {
  const group = require(`${kafkajsDir}src/producer/groupMessagesPerPartition.js`) as (a: unknown) => Record<string, { key: string }[]>;
  const messages = Array.from({ length: 40 }, (_, i) => ({ key: String(i) }));
  const grouped = group({ topic: 't', partitionMetadata: [{}], messages, partitioner: ({ message }: { message: { key: string } }) => Number(message.key) % 3 });
  assert.deepEqual(Object.keys(grouped).sort(), ['0', '1', '2']);
  for (const [partition, list] of Object.entries(grouped)) {
    assert.deepEqual(list.map((m) => m.key), messages.filter((m) => Number(m.key) % 3 === Number(partition)).map((m) => m.key));
  }
});

test('a producer round trip on Node 24 prints no TimeoutNegativeWarning (request queue timer never negative)', async () => {
  const kafka = await createTestKafka();
  const topic = kafka.topic('patch-check');
  await kafka.createTopics([{ name: 'patch-check' }]);
  const script = `
    import { Kafka, logLevel } from 'kafkajs';
    const kafka = new Kafka({ brokers: process.env.KAFKA_BROKERS.split(','), logLevel: logLevel.NOTHING });
    const producer = kafka.producer({ idempotent: true });
    await producer.connect();
    await producer.send({ topic: ${JSON.stringify(topic)}, messages: [{ key: 'k', value: 'v' }] });
    await producer.disconnect();
    console.log('sent');`;
  const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { cwd: process.cwd() });
  assert.equal(stdout.trim(), 'sent');
  assert.doesNotMatch(stderr, /TimeoutNegativeWarning/);
  assert.equal((await kafka.readTopic(topic, { atLeast: 1 })).length, 1);
});

test('a transactional producer looks its transaction coordinator up once, not before every AddPartitionsToTxn and EndTxn', async () => {
  const kafka = await createTestKafka();
  const topic = kafka.topic('patch-coordinator');
  await kafka.createTopics([{ name: 'patch-coordinator', partitions: 3 }]);
  const { Kafka, logLevel } = await import('kafkajs');
  const client = new Kafka({ brokers: kafka.brokers, logLevel: logLevel.NOTHING });
  const producer = client.producer({ transactionalId: `${kafka.prefix}patch-coordinator`, idempotent: true, maxInFlightRequests: 1 });
  const requests: string[] = [];
  producer.on(producer.events.REQUEST, (e) => requests.push(e.payload.apiName));
  await producer.connect();
  try {
    for (let i = 0; i < 5; i++) {
      const tx = await producer.transaction();
      await tx.send({ topic, messages: [{ key: `k${i}`, value: 'v' }] });
      await tx.commit();
    }
  } finally {
    await producer.disconnect();
  }
  assert.equal(requests.filter((r) => r === 'EndTxn').length, 5);
  // FindCoordinator is kafkajs's GroupCoordinator request: once, for InitProducerId (it made 11).
  assert.equal(requests.filter((r) => r === 'GroupCoordinator').length, 1);
  assert.equal((await kafka.readTopic(topic, { atLeast: 5 })).length, 5);
});

/**
 * A read-committed consumer must see exactly the committed records, on either Kafka client, however
 * the fetches fall: @platformatic/kafka 2.12.1 as published lets aborted records through when one fetch
 * spans several aborted transactions of one producer id (the fenced outbox publisher keeps one id
 * across its epochs) and when a fetch ends before an abort marker; patches/@platformatic+kafka+2.12.1.patch
 * (applied by `postinstall`) walks the batches as the Java client does. scripts/kafka-read-committed.ts
 * writes the transactions on the test broker and reads them with each client and two fetch sizes.
 */
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { promisify } from 'node:util';
import { kafkaBrokers } from '../../support/kafka.ts';

interface Line {
  client: string;
  fetch: string;
  committed: number;
  delivered: number;
  abortedDelivered: number;
  committedMissing: number;
}

test('read committed across several aborted transactions of one producer: each client, whole and one-batch fetches, gets every committed record and no aborted one', async () => {
  const { stdout } = await promisify(execFile)(process.execPath, ['scripts/kafka-read-committed.ts'], {
    env: { ...process.env, KAFKA_BROKERS: kafkaBrokers().join(',') },
    timeout: 90_000,
  });
  const lines = stdout.trim().split('\n').map((l) => JSON.parse(l) as Line);
  assert.deepEqual(
    lines.map((l) => [l.client, l.fetch]).sort(),
    [
      ['@platformatic/kafka', 'default'],
      ['@platformatic/kafka', 'one batch'],
      ['kafkajs', 'default'],
      ['kafkajs', 'one batch'],
    ],
  );
  for (const l of lines) {
    assert.equal(l.committed, 40, 'the script committed four transactions of 10');
    assert.deepEqual([l.delivered, l.abortedDelivered, l.committedMissing], [40, 0, 0], `${l.client}, ${l.fetch} fetch`);
  }
});

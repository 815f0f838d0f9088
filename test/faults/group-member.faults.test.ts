import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { envelopeToWire } from '../../src/platform/events/envelope.ts';
import { createKafkaBus } from '../../src/platform/events/kafka-bus.ts';
import { topicsToCreate } from '../../src/platform/events/topics.ts';
import { newId } from '../../src/platform/time.ts';
import { createTestDatabase } from '../support/db.ts';
import { createTestKafka, testKafkaClient } from '../support/kafka.ts';
import { waitFor } from '../support/wait.ts';
import { testLog } from '../platform/events/support.ts';

/**
 * Group members dying during a rebalance, on the client KAFKA_CLIENT names (shared broker: only our
 * own member processes are killed). Members A and B consume a 6-partition topic under steady keyed
 * load; C joins, and while the group rebalances for it A is SIGKILLed and B SIGSTOPped. C must end up
 * with every partition once A's and B's sessions (6 s) expire, and B, woken later, must rejoin
 * without undoing anything: every message takes effect exactly once (the inbox makes a redelivery a
 * skip) and, per key, in the order it was produced — no two members applying one partition at once.
 */

const TOPIC = 'pin.test.group-member.v1';
const KEYS = 12;
const CHILD = fileURLToPath(new URL('./support/member-child.ts', import.meta.url));

const t = await createTestDatabase();
await t.pool.query('create table public.member_effects (n bigserial primary key, member text not null, key text not null, seq int not null)');
const k = await createTestKafka();
const bus = createKafkaBus({ client: testKafkaClient, brokers: k.brokers, clientId: 'group-member-test', log: testLog });
await bus.start();
after(() => bus.stop());
await bus.ensureTopics(topicsToCreate([{ name: TOPIC, partitions: 6, consumed: true }], { prefix: k.prefix }));

const members = new Set<ChildProcess>();
after(() => {
  for (const c of members) c.kill('SIGKILL');
});

async function startMember(name: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [CHILD], {
    env: { ...process.env, MEMBER_NAME: name, MEMBER_DB_URL: t.url, MEMBER_TOPIC: TOPIC, MEMBER_PREFIX: k.prefix },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  members.add(child);
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => d.toString().includes('READY') && resolve());
    child.once('exit', (code) => reject(new Error(`member ${name} exited (${code}) before it was ready`)));
  });
  return child;
}

/** Keyed load: one message per key every `everyMs`, Seq counting up per key, until stop(). */
function startLoad(everyMs: number) {
  const produced = new Map<string, number>();
  let running = true;
  const loop = (async () => {
    while (running) {
      const batch = Array.from({ length: KEYS }, (_, i) => {
        const key = `key-${i}`;
        const seq = (produced.get(key) ?? 0) + 1;
        produced.set(key, seq);
        return envelopeToWire({ messageId: newId(), topic: TOPIC, key, eventType: 'E', contractVersion: 1, aggregateType: 'A', aggregateId: key, occurredAt: new Date().toISOString(), payload: { Seq: seq } });
      });
      await k.produce(k.topic(TOPIC), batch);
      await sleep(everyMs);
    }
  })();
  return {
    total: () => [...produced.values()].reduce((a, b) => a + b, 0),
    async stop() {
      running = false;
      await loop;
    },
  };
}

const effects = async () => (await t.pool.query<{ member: string; key: string; seq: number }>('select member, key, seq from public.member_effects order by n')).rows;

test(`a member SIGKILLed and one SIGSTOPped while the group rebalances (${testKafkaClient}): the survivor takes every partition, nothing is lost, applied twice or reordered`, { timeout: 180_000 }, async () => {
  const a = await startMember('A');
  const b = await startMember('B');
  const load = startLoad(50);
  await waitFor('A and B both applying', async () => new Set((await effects()).map((e) => e.member)).size === 2, 60_000);

  const c = startMember('C'); // its join starts a rebalance; the faults land while it runs
  await sleep(300);
  a.kill('SIGKILL');
  b.kill('SIGSTOP');
  const faultAt = Date.now();
  await c;
  await sleep(10_000);
  await load.stop();
  const total = load.total();

  // C alone must catch up once A's and B's sessions expire. B, frozen, may hold a row lock of a
  // transaction it had open: C then waits on it, so B is woken at the latest 20 s after the faults.
  const caughtUp = waitFor('every message applied', async () => (await effects()).length >= total, 90_000);
  await Promise.race([caughtUp, sleep(Math.max(0, 20_000 - (Date.now() - faultAt)))]);
  b.kill('SIGCONT');
  await caughtUp;
  await sleep(3000); // B, awake, rejoins: nothing more may take effect
  const rows = await effects();

  const byKey = new Map<string, number[]>();
  for (const r of rows) byKey.set(r.key, [...(byKey.get(r.key) ?? []), r.seq]);
  const reordered = [...byKey].filter(([, seqs]) => seqs.some((s, i) => i > 0 && s !== seqs[i - 1]! + 1)).map(([key]) => key);
  process.stderr.write(`[group-member] ${testKafkaClient}: ${total} produced, ${rows.length} applied, by member ${JSON.stringify(Object.fromEntries([...new Set(rows.map((r) => r.member))].map((m) => [m, rows.filter((r) => r.member === m).length])))}, caught up ${((Date.now() - faultAt) / 1000).toFixed(1)} s after the faults\n`);
  assert.equal(rows.length, total, 'every message took effect exactly once');
  assert.deepEqual(reordered, [], 'per key, in produced order with no gap or repeat');
  assert.ok(rows.slice(-KEYS).every((r) => r.member !== 'A'), 'the killed member applied nothing at the end');
});

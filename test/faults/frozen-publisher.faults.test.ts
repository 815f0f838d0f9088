import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { TOPICS } from '../../src/event-topics.ts';
import { createRng, faultSeed, phaseClock, printSummary } from './support/seed.ts';
import { freezeHolding, holdsJobLock } from './support/freeze.ts';
import { createStack, type Stack } from './support/stack.ts';
import { runScenario, stopAndDrain, topicEvents, type Verdict } from './support/workload.ts';
import { outboxWorkload } from './support/workloads/outbox.ts';
import { createUsers, userSyncWorkload } from './support/workloads/user-sync.ts';
import { waitFor } from '../support/wait.ts';

/**
 * Two replicas; the one holding the outbox publisher's lock is frozen with SIGSTOP while users are
 * renamed through the other (each rename a UserUpserted keyed by the user, on pin.identity.users.v1,
 * whose consumers keep the last snapshot per user). The other replica takes the publisher over once
 * its lease expires (LockTtl 30 s; the first of the frozen replica's leases to expire ends its lock
 * session, and with it every lock it held) and publishes; the frozen one is woken with SIGCONT while the
 * load goes on. Per-user order must survive the takeover: for every key, the last record on the topic
 * (ignoring repeats of an already-seen message id) is the key's newest outbox row — and, since Kafka
 * fences the old holder's producer, no late record of the woken holder lands after the new holder's.
 */

const USERS = 10;
const PUBLISHER = 'outbox-publisher';
/** The publisher's LockTtl (the kernel's default: it names none). */
const LOCK_TTL_MS = 30_000;
const seed = faultSeed();

interface KeyOrder {
  keys: number;
  /** Keys whose last first-seen record is not their newest row. */
  reordered: string[];
  /** Keys whose very last record (repeats included) is not their newest row. */
  lateRepeats: string[];
}

/** Walks the topic in partition order (a key lives in one partition) against the outbox's newest row per key. */
async function keyOrder(stack: Stack, topic: string): Promise<KeyOrder> {
  const { rows } = await stack.database.pool.query<{ key: string; id: string; n: number }>(
    `select key, (array_agg(id::text order by id desc))[1] as id, count(*)::int as n from platform.outbox where topic = $1 group by key`,
    [topic],
  );
  const total = rows.reduce((n, r) => n + r.n, 0);
  const events = await topicEvents(stack, topic, total);
  const seen = new Set<string>();
  const lastFirstSeen = new Map<string, string>();
  const last = new Map<string, string>();
  for (const e of events) {
    last.set(e.key ?? '', e.messageId);
    if (seen.has(e.messageId)) continue;
    seen.add(e.messageId);
    lastFirstSeen.set(e.key ?? '', e.messageId);
  }
  return {
    keys: rows.length,
    reordered: rows.filter((r) => lastFirstSeen.get(r.key) !== r.id).map((r) => r.key),
    lateRepeats: rows.filter((r) => last.get(r.key) !== r.id).map((r) => r.key),
  };
}

interface Outcome {
  takeoverLines: Record<string, unknown>[];
  order: KeyOrder;
  verdicts: Verdict[];
  drainError: unknown;
}

async function scenario(): Promise<Outcome> {
  const stack = await createStack();
  const phase = phaseClock();
  const [front, holder] = await Promise.all([stack.start('front'), stack.start('holder')]);
  const users = await createUsers(stack, front, USERS);
  await waitFor(
    'the user replica of every user',
    async () => (await stack.database.pool.query(`select 1 from messenger.users where id = any($1)`, [users])).rowCount === USERS,
    60_000,
  );
  const workloads = [outboxWorkload(stack), userSyncWorkload(stack, front, createRng(seed), users)];
  phase('setup');
  try {
    await sleep(2000);
    await freezeHolding(stack, holder, PUBLISHER);
    // The frozen lock session holds every lock of that replica: the first of its jobs whose lease
    // expires has the front end the session, and the publisher's lock is free with it.
    await waitFor('the front to run the publisher', () => holdsJobLock(stack, front, PUBLISHER), LOCK_TTL_MS + 15_000);
    phase('freeze and takeover');
    await sleep(2000); // renames published by the front alone
    holder.service.child.kill('SIGCONT');
    await sleep(5000); // the woken holder runs beside the front
    const drainError = await stopAndDrain(workloads);
    phase('drain');
    return {
      takeoverLines: front.service.lines().filter((l) => String(l.msg).startsWith('single-runner lock taken over')),
      order: await keyOrder(stack, TOPICS.identityUsers),
      verdicts: await Promise.all(workloads.map((w) => w.verdict({ kills: 1 }))),
      drainError,
    };
  } finally {
    holder.service.child.kill('SIGCONT');
    for (const w of workloads) await w.stop();
  }
}

const ok = await runScenario(scenario);

describe(`two replicas, the outbox publisher's holder frozen with SIGSTOP (seed ${seed})`, () => {
  test('the other replica ended the frozen lock session (a logged takeover) and runs the publisher', () => {
    const { takeoverLines } = ok();
    assert.ok(takeoverLines.length >= 1, 'no takeover logged');
  });

  test('for every key the last record on the topic (ignoring repeats) is the key\'s newest outbox row, and no late repeat lands after it', () => {
    const { order } = ok();
    assert.ok(order.keys >= USERS, `${order.keys} keys`);
    assert.deepEqual(order.reordered, [], 'keys whose last new record is not their newest row');
    assert.deepEqual(order.lateRepeats, [], 'keys with an older record repeated after their newest row');
  });

  test('nothing is lost, repeats stay within what one takeover allows', () => {
    const { verdicts, drainError } = ok();
    for (const [i, verdict] of verdicts.entries()) {
      printSummary({ fault: `sigstop-outbox-publisher-${i}`, seed, kills: 1, expected: verdict.expected, seen: verdict.seen, duplicated: verdict.duplicated });
      assert.ok(verdict.expected > 0, 'the load produced nothing to check');
      assert.deepEqual(verdict.problems, [], `seed ${seed}${drainError ? `; ${String(drainError)}` : ''}`);
    }
  });
});

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { faultSeed, phaseClock, printSummary } from './support/seed.ts';
import { freezeHolding } from './support/freeze.ts';
import { createStack } from './support/stack.ts';
import { runScenario, stopAndDrain, type Verdict } from './support/workload.ts';
import { realtimeWorkload } from './support/workloads/realtime.ts';
import { createUsers } from './support/workloads/user-sync.ts';
import { SCRAPE_HEADERS } from '../support/secure-env.ts';
import { connectClient } from '../support/signalr.ts';
import { waitFor } from '../support/wait.ts';

/**
 * Two replicas; the one holding the realtime dispatcher's single-runner lock is frozen with SIGSTOP
 * (its kernel still answers the lock session's keepalives, so the advisory lock alone would stay
 * held for good). Its lease runs out within LockTtl; the other replica ends the frozen lock session,
 * takes over, and a message sent through it reaches a connected client within LockTtl + 5 s. Woken
 * with SIGCONT, the old holder finds its lock session gone and steps down; nothing is lost and
 * repeated pushes stay within one batch.
 */

const REALTIME_JOB = 'messenger-realtime-dispatch';
/** Short, so the scenario is quick; at least MaxRunDuration (5 s) + the 2 s margin. */
const LOCK_TTL_MS = 8000;
const seed = faultSeed();

interface Outcome {
  probeMs: number;
  takeoverLines: Record<string, unknown>[];
  takeoversMetric: string | undefined;
  holderLines: Record<string, unknown>[];
  verdict: Verdict;
  drainError: unknown;
}

async function scenario(): Promise<Outcome> {
  const stack = await createStack();
  const phase = phaseClock();
  // The LockTtl is derived from MaxRunDuration in service; a shorter one is handed in code.
  const tuning = { kernel: { dispatchLockTtlMs: LOCK_TTL_MS } };
  // `front` serves REST and Bob's hub sockets; `holder` is frozen while it dispatches.
  const [front, holder] = await Promise.all([stack.start('front', { tuning }), stack.start('holder', { tuning })]);
  const [alice, bob] = await createUsers(stack, front, 2);
  await waitFor(
    'the user replica of both users',
    async () => (await stack.database.pool.query(`select 1 from messenger.users where id = any($1)`, [[alice, bob]])).rowCount === 2,
    60_000,
  );
  const load = await realtimeWorkload(stack, front, alice!, bob!);
  // A chat of its own for the probe: one message sent after the freeze, timed to Bob's socket.
  const [aliceToken, bobToken] = await Promise.all([stack.userToken(alice!), stack.userToken(bob!)]);
  const chat = await stack.call<{ id: string }>(front, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'Probe', memberUserIds: [bob] }, aliceToken);
  if (chat.status !== 201) throw new Error(`create chat: ${chat.status}`);
  const probeClient = await connectClient(`${front.url}/hubs/messenger`, bobToken, { events: ['message_received'] });
  phase('setup');
  try {
    await sleep(2000);
    await freezeHolding(stack, holder, REALTIME_JOB);
    const frozenAt = Date.now();
    const sent = await stack.call<{ id: string }>(front, 'POST', `/api/messenger/chats/${chat.body.id}/messages`, { kind: 'Text', body: 'probe' }, aliceToken);
    if (sent.status !== 201) throw new Error(`probe send: ${sent.status}`);
    await waitFor(
      'the probe message to reach Bob through the other replica',
      () => probeClient.received.some((r) => (r.payload as { MessageId: string }).MessageId === sent.body.id),
      LOCK_TTL_MS + 30_000,
    );
    const probeMs = Date.now() - frozenAt;
    phase(`freeze and takeover (probe pushed ${probeMs} ms after the freeze)`);
    await sleep(2000); // the load goes on, dispatched by the front alone
    holder.service.child.kill('SIGCONT');
    await sleep(3000); // the woken holder runs again beside the front
    const drainError = await stopAndDrain([load]);
    phase('drain');
    const metrics = await fetch(`${front.url}/metrics`, { headers: SCRAPE_HEADERS }).then((r) => r.text());
    return {
      probeMs,
      takeoverLines: front.service.lines().filter((l) => String(l.msg).startsWith('single-runner lock taken over')),
      takeoversMetric: metrics.split('\n').find((l) => l.startsWith(`job_lock_takeovers_total{job="${REALTIME_JOB}"}`)),
      holderLines: holder.service.lines(),
      verdict: await load.verdict({ kills: 1 }),
      drainError,
    };
  } finally {
    holder.service.child.kill('SIGCONT');
    await load.stop();
    await probeClient.connection.stop().catch(() => undefined);
  }
}

const ok = await runScenario(scenario);

describe(`two replicas, the realtime dispatcher's holder frozen with SIGSTOP (seed ${seed})`, () => {
  test('a message sent through the other replica reaches a connected client within LockTtl + 5 s', () => {
    const { probeMs } = ok();
    assert.ok(probeMs <= LOCK_TTL_MS + 5000, `pushed ${probeMs} ms after the freeze`);
  });

  test('the takeover is logged with the job, the old and new holder and the token, and counted', () => {
    const { takeoverLines, takeoversMetric } = ok();
    const line = takeoverLines.find((l) => l.job === REALTIME_JOB);
    assert.ok(line, `no takeover line for ${REALTIME_JOB}: ${JSON.stringify(takeoverLines)}`);
    assert.ok(line.oldHolder && line.newHolder && line.oldHolder !== line.newHolder);
    assert.equal(BigInt(String(line.token)), BigInt(String(line.oldToken)) + 1n);
    assert.ok(takeoversMetric && Number(takeoversMetric.split(' ').at(-1)) >= 1, `metric line: ${takeoversMetric}`);
  });

  test('woken with SIGCONT, the old holder finds its lock session ended and steps down', () => {
    const { holderLines } = ok();
    assert.ok(
      holderLines.some((l) => String(l.msg).startsWith('job lock connection lost')),
      'the old holder saw its lock session end',
    );
  });

  test('nothing is lost, and repeated pushes stay within one batch', () => {
    const { verdict, drainError } = ok();
    printSummary({ fault: 'sigstop-realtime-dispatch', seed, kills: 1, expected: verdict.expected, seen: verdict.seen, duplicated: verdict.duplicated });
    assert.ok(verdict.expected > 0, 'the load produced nothing to check');
    assert.deepEqual(verdict.problems, [], `seed ${seed}${drainError ? `; ${String(drainError)}` : ''}`);
    assert.equal(verdict.seen, verdict.expected);
  });
});

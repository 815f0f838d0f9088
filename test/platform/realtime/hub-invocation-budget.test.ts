import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { HubMethod } from '../../../src/platform/realtime/hub-methods.ts';
import { connectClient, newUserId, startHubApp, tokenFor } from '../../support/signalr.ts';
import { metricValue } from '../../support/metrics.ts';
import { waitFor } from '../../support/wait.ts';

/**
 * Each hub connection's budget of method calls (HUB_INVOCATIONS_PER_SECOND, a burst of twice that),
 * through the official client in both protocols: past it a call is refused unrun with the completion
 * error HUB_RATE_LIMITED, and a connection refused a burst's worth of times is closed with a close
 * message naming the reason. A StreamInvocation of a method that does not stream is refused unrun.
 */

/** A hub whose one method `Echo` counts its runs. */
async function countingHub(budget = { perSecond: 1, burst: 5 }) {
  let runs = 0;
  const echo: HubMethod = async () => {
    runs += 1;
  };
  const app = await startHubApp({ methods: new Map([['Echo', echo]]), invocationBudget: budget });
  return { ...app, runs: () => runs };
}

for (const protocol of ['json', 'messagepack'] as const) {
  test(`${protocol}: a flood past the budget gets refusals, runs nothing past it, then is closed with a close message naming the reason`, async () => {
    const { url, registry, runs } = await countingHub();
    const flooder = await connectClient(url, await tokenFor(newUserId()), { protocol });
    const answers = await Promise.allSettled(Array.from({ length: 30 }, () => flooder.connection.invoke('Echo')));
    const refused = answers.filter((a) => a.status === 'rejected' && /^HUB_RATE_LIMITED: too many hub method calls/.test(String(a.reason.message)));
    // The burst's calls ran; their answers may come after the close (then the client rejects them as canceled).
    assert.equal(runs(), 5, 'the burst ran, a refused call runs nothing');
    assert.equal(refused.length, 5, 'a burst of refusals, then the close');
    await waitFor('the close', () => flooder.closed);
    assert.match(String(flooder.closedWith?.message), /HUB_RATE_LIMITED, too many hub method calls/);
    assert.equal(await metricValue(registry, 'hub_invocations_refused_total', { reason: 'rate' }), 5);
    await waitFor('the close counted', async () => (await metricValue(registry, 'hub_disconnects_total', { reason: 'invocation_rate' })) === 1);
  });
}

describe('hub invocation budget', () => {
  test("a client within its budget is unaffected by another connection's flood, of its own user too", async () => {
    const { url, runs } = await countingHub({ perSecond: 1, burst: 5 });
    const userId = newUserId();
    const [steady, flooder] = [await connectClient(url, await tokenFor(userId)), await connectClient(url, await tokenFor(userId))];
    await Promise.allSettled(Array.from({ length: 30 }, () => flooder.connection.invoke('Echo')));
    await waitFor('the flooder is closed', () => flooder.closed);
    for (let i = 0; i < 5; i++) await steady.connection.invoke('Echo');
    assert.equal(runs(), 10, "the flooder's burst and the steady client's five calls");
    assert.equal(steady.closed, false);
  });

  test("a user's connections share a budget of twice one connection's: more sockets do not multiply it", async () => {
    const { url, registry, runs } = await countingHub({ perSecond: 0.01, burst: 5 });
    const userId = newUserId();
    const sockets = [await connectClient(url, await tokenFor(userId)), await connectClient(url, await tokenFor(userId)), await connectClient(url, await tokenFor(userId))];
    // Four calls each: within every connection's own burst of five, twelve in all past the user's ten.
    const answers = [];
    for (const socket of sockets) for (let i = 0; i < 4; i++) answers.push(await socket.connection.invoke('Echo').then(() => 'ran', (e: Error) => e.message));
    assert.equal(runs(), 10, "the user's budget: twice a connection's burst");
    assert.deepEqual(answers.slice(10), Array(2).fill('HUB_RATE_LIMITED: too many hub method calls on this connection; slow down.'));
    assert.equal(await metricValue(registry, 'hub_invocations_refused_total', { reason: 'user_rate' }), 2);
    const other = await connectClient(url, await tokenFor(newUserId()));
    await other.connection.invoke('Echo');
    assert.equal(runs(), 11, 'another user has a budget of their own');
  });

  test('a StreamInvocation of a method that does not stream is refused with a completion error and not run', async () => {
    const { url, registry, runs } = await countingHub({ perSecond: 100, burst: 100 });
    const client = await connectClient(url, await tokenFor(newUserId()));
    const error = await new Promise<Error>((resolve, reject) =>
      client.connection.stream('Echo').subscribe({ next: () => reject(new Error('an item')), complete: () => reject(new Error('completed')), error: resolve }),
    );
    assert.equal(error.message, "The client attempted to invoke the non-streaming 'Echo' method with a streaming invocation.");
    assert.equal(runs(), 0);
    assert.equal(await metricValue(registry, 'hub_invocations_refused_total', { reason: 'stream' }), 1);
    await client.connection.invoke('Echo');
    assert.equal(runs(), 1, 'the connection stays open for ordinary calls');
  });
});

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { REALTIME_DEFAULTS } from '../../../src/platform/realtime/defaults.ts';
import { userGroup } from '../../../src/platform/realtime/groups.ts';
import { connectClient, connectRaw, newUserId, startHubApp, tokenFor } from '../../support/signalr.ts';
import { metricValue } from '../../support/metrics.ts';
import { waitFor } from '../../support/wait.ts';

/**
 * The hub queues a connection's frames and writes them once the current burst of sends is over:
 * one WebSocket message carrying every record, in order (SignalR clients read all records of a
 * message). What a client receives, the order, the frame metric and the slow-consumer cap are as
 * when every frame was written on its own.
 */
describe('hub write batching', () => {
  test('sends made in one burst reach a connection as one WebSocket message with every record in order, each counted', async () => {
    const { hub, wsUrl, registry } = await startHubApp();
    const userId = newUserId();
    const raw = await connectRaw(wsUrl, await tokenFor(userId));
    let messages = 0;
    raw.ws.on('message', () => messages++);

    await Promise.all([1, 2, 3, 4, 5].map((n) => hub.send(userGroup(userId), 'numbered', { n })));

    await waitFor('five records', () => raw.records.length === 5);
    assert.deepEqual(
      raw.records.map((r) => [r.type, r.target, (r.arguments as { n: number }[])[0]!.n]),
      [1, 2, 3, 4, 5].map((n) => [1, 'numbered', n]),
    );
    assert.equal(messages, 1, 'one WebSocket message for the burst');
    assert.equal(await metricValue(registry, 'hub_frames_sent_total', { kind: 'invocation' }), 5);
  });

  test('sends in separate turns of the event loop still arrive one by one', async () => {
    const { hub, wsUrl } = await startHubApp();
    const userId = newUserId();
    const raw = await connectRaw(wsUrl, await tokenFor(userId));
    for (const n of [1, 2, 3]) {
      await hub.send(userGroup(userId), 'numbered', { n });
      await waitFor(`record ${n}`, () => raw.records.length === n);
    }
  });

  test('the official client receives every record of a batched message, in order', async () => {
    const { hub, url } = await startHubApp();
    const userId = newUserId();
    const client = await connectClient(url, await tokenFor(userId), { events: ['numbered', 'other'] });

    await Promise.all([
      hub.send(userGroup(userId), 'numbered', { n: 1 }),
      hub.send(userGroup(userId), 'other', { n: 2 }),
      hub.send(userGroup(userId), 'numbered', { n: 3 }),
    ]);

    await waitFor('three invocations', () => client.received.length === 3);
    assert.deepEqual(client.received, [
      { event: 'numbered', payload: { n: 1 } },
      { event: 'other', payload: { n: 2 } },
      { event: 'numbered', payload: { n: 3 } },
    ]);
  });

  test('a burst bigger than the flush threshold goes out in slices: a reading client below the cap is not closed', async () => {
    const cap = 4 * REALTIME_DEFAULTS.hubFlushAtBytes;
    const { hub, wsUrl, registry } = await startHubApp({ maxBufferedBytes: cap });
    const userId = newUserId();
    const raw = await connectRaw(wsUrl, await tokenFor(userId));
    let messages = 0;
    raw.ws.on('message', () => messages++);
    const chunk = 'y'.repeat(8 * 1024);
    const count = Math.ceil((2 * cap) / chunk.length); // twice the cap in one burst

    await Promise.all(Array.from({ length: count }, (_, i) => hub.send(userGroup(userId), 'bulk', { chunk, i })));

    await waitFor(`${count} records`, () => raw.records.length === count, 20_000);
    assert.deepEqual(
      raw.records.map((r) => (r.arguments as { i: number }[])[0]!.i),
      Array.from({ length: count }, (_, i) => i),
    );
    assert.ok(messages > 1, 'written in slices');
    assert.equal(await metricValue(registry, 'hub_slow_consumer_closes_total'), 0);
    assert.equal(raw.isClosed(), false);
  });

  test('frames queued when the hub closes are written before the close message', async () => {
    const { hub, wsUrl } = await startHubApp();
    const userId = newUserId();
    const raw = await connectRaw(wsUrl, await tokenFor(userId));

    await Promise.all([hub.send(userGroup(userId), 'last', { n: 1 }), hub.send(userGroup(userId), 'last', { n: 2 })]);
    // The burst is queued, not yet flushed: close now.
    const closing = hub.close();

    await raw.closed;
    await closing;
    assert.deepEqual(
      raw.records.map((r) => r.type),
      [1, 1, 7],
    );
    assert.match(String(raw.records[2]!.error), /shutting down/);
  });
});

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { HubConnectionBuilder, HttpTransportType, LogLevel } from '@microsoft/signalr';
import { userGroup } from '../../../src/platform/realtime/groups.ts';
import { connectRaw, newUserId, startHubApp, tokenFor } from '../../support/signalr.ts';
import { metricValue } from '../../support/metrics.ts';
import { waitFor } from '../../support/wait.ts';

/**
 * Reconnect storms: a replica admits new connections at HUB_MAX_CONNECTS_PER_SECOND (a token bucket
 * holding one second's worth). Past it negotiate answers 503 with Retry-After, and a socket that
 * skipped negotiate is answered as connected and closed at once with a close message that allows
 * reconnecting; both are counted in hub_connections_refused_total{reason="rate"}.
 */

const negotiate = (url: string, token: string) =>
  fetch(`${url}/negotiate?negotiateVersion=1`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });

describe('hub admission rate (HUB_MAX_CONNECTS_PER_SECOND)', () => {
  test('past the rate, negotiate answers 503 HUB_BUSY with Retry-After; a second later it admits again', async () => {
    const { url, registry } = await startHubApp({ maxConnectsPerSecond: 3 });
    const token = await tokenFor(newUserId());
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push(await negotiate(url, token));
    assert.deepEqual(answers.map((r) => r.status), [200, 200, 200, 503, 503]);
    const busy = answers[3]!;
    assert.equal(busy.headers.get('retry-after'), '1');
    assert.equal(((await busy.json()) as { code: string }).code, 'HUB_BUSY');
    assert.equal(await metricValue(registry, 'hub_connections_refused_total', { reason: 'rate' }), 2);
    await new Promise((r) => setTimeout(r, 1100));
    assert.equal((await negotiate(url, token)).status, 200, 'the bucket refilled');
  });

  test('a negotiated socket does not take a second place: the upgrade after an admitted negotiate always opens', async () => {
    const { hub, url } = await startHubApp({ maxConnectsPerSecond: 1 });
    const userId = newUserId();
    const events: unknown[] = [];
    const connection = new HubConnectionBuilder()
      .withUrl(url, { accessTokenFactory: () => tokenFor(userId), transport: HttpTransportType.WebSockets })
      .configureLogging(LogLevel.None)
      .build();
    connection.on('ping_event', (p) => events.push(p));
    await connection.start();
    await hub.send(userGroup(userId), 'ping_event', { n: 1 });
    await waitFor('the event', () => events.length === 1);
    await connection.stop();
  });

  test('past the rate, a socket that skipped negotiate gets its handshake answered and a close message with allowReconnect: true', async () => {
    const { wsUrl, registry } = await startHubApp({ maxConnectsPerSecond: 1 });
    const first = await connectRaw(wsUrl, await tokenFor(newUserId()));
    assert.equal(first.isClosed(), false);
    const turnedAway = await connectRaw(wsUrl, await tokenFor(newUserId()));
    await turnedAway.closed;
    assert.equal(turnedAway.records.length, 1);
    assert.equal(turnedAway.records[0]!.type, 7);
    assert.equal(turnedAway.records[0]!.allowReconnect, true);
    assert.match(String(turnedAway.records[0]!.error), /busy/i);
    assert.equal(await metricValue(registry, 'hub_connections_refused_total', { reason: 'rate' }), 1);
    assert.equal(first.isClosed(), false, 'admitted connections are left alone');
  });

  test("one user's negotiate loop is refused 429 RATE_LIMITED past their share, without taking the places another user connects with", async () => {
    const { url, wsUrl, registry } = await startHubApp({ maxConnectsPerSecond: 6, userConnectShare: { perSecond: 1, burst: 3 } });
    const mallory = await tokenFor(newUserId());
    const loop = [];
    for (let i = 0; i < 8; i++) loop.push(await negotiate(url, mallory));
    assert.deepEqual(loop.map((r) => r.status), [200, 200, 200, 429, 429, 429, 429, 429]);
    assert.equal(loop[3]!.headers.get('retry-after'), '1');
    assert.equal(((await loop[3]!.json()) as { code: string }).code, 'RATE_LIMITED');
    await assert.rejects(connectRaw(wsUrl, mallory), /HTTP 429/, 'an upgrade that skips negotiate is refused the same way');
    // The replica admits 6 a second: mallory's loop holds only her 3 of them, so bob's share is all there.
    const bob = await tokenFor(newUserId());
    const bobs = [];
    for (let i = 0; i < 3; i++) bobs.push((await negotiate(url, bob)).status);
    assert.deepEqual(bobs, [200, 200, 200]);
    assert.equal(await metricValue(registry, 'hub_connections_refused_total', { reason: 'user_rate' }), 6);
    assert.equal(await metricValue(registry, 'hub_connections_refused_total', { reason: 'rate' }), 0);
  });
});

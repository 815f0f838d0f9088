import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { HubRefusal } from '../../../src/platform/realtime/access.ts';
import { createRedisBackplane } from '../../../src/platform/realtime/backplane-redis.ts';
import { userGroup } from '../../../src/platform/realtime/groups.ts';
import type { GroupMembers } from '../../../src/platform/realtime/membership.ts';
import { createLogger } from '../../../src/platform/observability/logger.ts';
import { connectClient, newUserId, startHubApp, tokenFor, type TestClient } from '../../support/signalr.ts';
import { metricValue } from '../../support/metrics.ts';
import { waitFor } from '../../support/wait.ts';

const redisUrl = process.env.REDIS_URL;
if (!redisUrl) throw new Error('REDIS_URL is unset: run the tests with `npm test` (scripts/services.sh starts Redis)');
const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');

const seqs = (c: TestClient) => c.received.map((r) => (r.payload as { n: unknown }).n);

/** A marker on the user's own group is sent after the sends before it: once it arrives, they would have too. */
async function settle(hub: { send: (g: string, e: string, p: unknown) => Promise<void> }, client: TestClient, userId: string) {
  const marker = `marker-${newUserId()}`;
  await hub.send(userGroup(userId), 'message_received', { n: marker });
  await waitFor('the marker', () => seqs(client).includes(marker));
}

describe('hub connection caps', () => {
  test('a user past HUB_MAX_CONNECTIONS_PER_USER is refused with the reason; other users and a freed slot are not', async () => {
    const { url, registry } = await startHubApp({ maxConnectionsPerUser: 2 });
    const userId = newUserId();
    const token = await tokenFor(userId);
    const first = await connectClient(url, token);
    await connectClient(url, token);
    await assert.rejects(connectClient(url, token), /Too many connections: a user may hold at most 2/);
    await assert.rejects(connectClient(url, token, { skipNegotiation: true }), /Too many connections/);
    assert.equal(await metricValue(registry, 'hub_connections_refused_total', { reason: 'user_limit' }), 2);
    assert.equal(await metricValue(registry, 'hub_connections_active'), 2, 'refused sockets never count as connections');

    await connectClient(url, await tokenFor(newUserId()));
    await first.connection.stop();
    await waitFor('the slot to be freed', async () => (await metricValue(registry, 'hub_connections_active')) === 2);
    await connectClient(url, token);
  });

  test('a replica past HUB_MAX_CONNECTIONS refuses any user with the reason', async () => {
    const { url, registry } = await startHubApp({ maxConnections: 2 });
    await connectClient(url, await tokenFor(newUserId()));
    await connectClient(url, await tokenFor(newUserId()));
    await assert.rejects(connectClient(url, await tokenFor(newUserId())), /Too many connections: this server holds its maximum of 2/);
    assert.equal(await metricValue(registry, 'hub_connections_refused_total', { reason: 'replica_limit' }), 1);
  });
});

describe('hub access: refusals and revocation', () => {
  test('resolveGroups throwing a HubRefusal refuses the connection with its reason, counted as forbidden', async () => {
    const { url, registry, hub } = await startHubApp({
      resolveGroups: async () => {
        throw new HubRefusal('Forbidden: the user is blocked or archived.');
      },
    });
    await assert.rejects(connectClient(url, await tokenFor(newUserId())), /Forbidden: the user is blocked or archived/);
    assert.equal(await metricValue(registry, 'hub_connections_refused_total', { reason: 'forbidden' }), 1);
    await waitFor('the refused socket to close', () => hub.connectionCount() === 0);
  });

  test('disconnectUser closes the user\'s connections on every replica with a close message giving the reason', async () => {
    const channel = `test:${randomBytes(6).toString('hex')}:hub`;
    const a = await startHubApp({ backplane: await createRedisBackplane({ redisUrl: redisUrl!, channel, logger }) });
    const b = await startHubApp({ backplane: await createRedisBackplane({ redisUrl: redisUrl!, channel, logger }) });
    const [blocked, other] = [newUserId(), newUserId()];
    const onA = await connectClient(a.url, await tokenFor(blocked));
    const onB = await connectClient(b.url, await tokenFor(blocked));
    const bystander = await connectClient(b.url, await tokenFor(other));

    await a.hub.disconnectUser(blocked, 'Forbidden: the user is blocked or archived.');
    await waitFor('both of its connections to close', () => onA.closed && onB.closed);
    assert.match(String(onB.closedWith), /Forbidden: the user is blocked or archived/);
    assert.equal(bystander.closed, false);
    await waitFor('counted on B', async () => (await metricValue(b.registry, 'hub_disconnects_total', { reason: 'access_revoked' })) === 1);
  });

  test('the periodic access recheck closes connections of users a check reports revoked', async () => {
    const revoked = new Set<string>();
    const { url } = await startHubApp({
      access: { intervalMs: 100, checks: [{ reason: 'Forbidden: access revoked.', revoked: async (users) => users.filter((u) => revoked.has(u)) }] },
    });
    const [kept, lost] = [newUserId(), newUserId()];
    const keptClient = await connectClient(url, await tokenFor(kept));
    const lostClient = await connectClient(url, await tokenFor(lost));
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(lostClient.closed, false);
    revoked.add(lost);
    await waitFor('the revoked user closed', () => lostClient.closed);
    assert.match(String(lostClient.closedWith), /Forbidden: access revoked/);
    assert.equal(keptClient.closed, false);
  });
});

describe('hub sends checked against the group membership version', () => {
  /** The owner's store of one group: its members and version; `calls` counts reads. */
  function store(members: string[]) {
    const s = { version: 1, members, calls: 0, fail: false, gate: undefined as Promise<void> | undefined };
    const resolve = async (): Promise<GroupMembers> => {
      s.calls++;
      await s.gate;
      if (s.fail) throw new Error('database unavailable');
      return { version: s.version, userIds: [...s.members] };
    };
    return { s, resolve };
  }

  test('a member removed without a leave message gets no send made at the newer version; the others get it', async () => {
    const [kept, removed] = [newUserId(), newUserId()];
    const group = `chat:${newUserId()}`;
    const { s, resolve } = store([kept, removed]);
    const { hub, url, registry } = await startHubApp({ resolveGroups: async () => [group], resolveGroupMembers: async () => resolve() });
    const keptClient = await connectClient(url, await tokenFor(kept), { events: ['message_received'] });
    const removedClient = await connectClient(url, await tokenFor(removed), { events: ['message_received'] });

    await hub.send(group, 'message_received', { n: 1 }, { membershipVersion: 1 });
    await hub.send(group, 'message_received', { n: 2 }, { membershipVersion: 1 });
    await waitFor('both at version 1', () => seqs(keptClient).length === 2 && seqs(removedClient).length === 2);
    assert.equal(s.calls, 1, 'one read per group and version, not per send');

    // The owner removed the user (version 2); the leave never reached this replica.
    s.members = [kept];
    s.version = 2;
    await hub.send(group, 'message_received', { n: 3 }, { membershipVersion: 2 });
    await waitFor('the kept member gets it', () => seqs(keptClient).includes(3));
    await settle(hub, removedClient, removed);
    assert.deepEqual(seqs(removedClient).slice(0, 2), [1, 2]);
    assert.equal(seqs(removedClient).includes(3), false, 'nothing after the removal');
    assert.equal(await metricValue(registry, 'hub_group_resyncs_total', { result: 'ok' }), 2);
  });

  test('sends that arrive while the membership is read keep their order; a member added without a join message gets them', async () => {
    const [first, added] = [newUserId(), newUserId()];
    const group = `chat:${newUserId()}`;
    const { s, resolve } = store([first]);
    const { hub, url } = await startHubApp({ resolveGroups: async (p) => (p.userId === first ? [group] : []), resolveGroupMembers: resolve });
    const firstClient = await connectClient(url, await tokenFor(first), { events: ['message_received'] });
    const addedClient = await connectClient(url, await tokenFor(added), { events: ['message_received'] });

    let open: () => void = () => {};
    s.gate = new Promise((r) => (open = r));
    s.members = [first, added];
    s.version = 2;
    for (let n = 1; n <= 5; n++) await hub.send(group, 'message_received', { n }, { membershipVersion: 2 });
    open();
    await waitFor('all five to both', () => seqs(firstClient).length === 5 && seqs(addedClient).length === 5);
    assert.deepEqual(seqs(firstClient), [1, 2, 3, 4, 5]);
    assert.deepEqual(seqs(addedClient), [1, 2, 3, 4, 5]);
    assert.equal(s.calls, 1);
  });

  test('when the membership cannot be read the send is dropped (fail closed) and counted; a later read delivers again', async () => {
    const member = newUserId();
    const group = `chat:${newUserId()}`;
    const { s, resolve } = store([member]);
    const { hub, url, registry } = await startHubApp({ resolveGroups: async () => [group], resolveGroupMembers: resolve });
    const client = await connectClient(url, await tokenFor(member), { events: ['message_received'] });

    s.fail = true;
    await hub.send(group, 'message_received', { n: 1 }, { membershipVersion: 1 });
    await waitFor('the send dropped', async () => (await metricValue(registry, 'hub_unverified_sends_dropped_total')) === 1);
    assert.equal(await metricValue(registry, 'hub_group_resyncs_total', { result: 'failed' }), 3);
    s.fail = false;
    await hub.send(group, 'message_received', { n: 2 }, { membershipVersion: 1 });
    await waitFor('the next send', () => seqs(client).includes(2));
    assert.deepEqual(seqs(client), [2]);
  });
});

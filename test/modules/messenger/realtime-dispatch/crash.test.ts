import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { messengerApp, type MessengerApp } from '../support/app.ts';
import { outboxRow } from '../support/dispatch.ts';
import { waitFor } from '../../../support/wait.ts';

/** Starts the service as a child process on the test's database; resolves with its port and a SIGKILL. */
async function startServer(m: MessengerApp, env: Record<string, string>) {
  const child = spawn(process.execPath, ['test/modules/messenger/realtime-dispatch/fixtures/server.ts'], {
    env: { ...process.env, KAFKA_BROKERS: '', REALTIME_BACKPLANE_ENABLED: 'false', SERVER_DATABASE_URL: m.database.url, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  after(async () => {
    child.kill('SIGKILL');
    await exited;
  });
  const port = await new Promise<number>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const m = /^LISTENING (\d+)$/.exec(line);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`server exited early (${code})`)));
  });
  const kill = async () => {
    child.kill('SIGKILL');
    await exited;
    // Its sessions end when PostgreSQL reads the closed sockets; its single-runner lock goes with them.
    await waitFor('the dead service to release its advisory locks', async () => {
      const { rows } = await m.pool.query<{ n: number }>(
        `select count(*)::int as n from pg_locks where locktype = 'advisory' and database = (select oid from pg_database where datname = current_database())`,
      );
      return rows[0]!.n === 0;
    });
  };
  const send = async (token: string, chatId: string, body: string) => {
    const res = await fetch(`http://127.0.0.1:${port}/api/messenger/chats/${chatId}/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'Text', body }),
    });
    assert.equal(res.status, 201);
    return (await res.json()) as { id: string; seq: number };
  };
  return { port, kill, send };
}

async function setup() {
  const m = await messengerApp();
  const [alice, bob] = [await m.user(), await m.user()];
  const chat = (await m.call<{ id: string }>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: [bob.id] })).body;
  await m.dispatch();
  // Bob is connected to the replica that survives (the restarted service).
  const client = await m.connect(bob.token, ['message_received']);
  return { m, alice, bob, chat, client };
}

async function rowOf(m: MessengerApp, messageId: string): Promise<string> {
  const { rows } = await m.pool.query<{ id: string }>(`select id from push.realtime_outbox where message_id = $1`, [messageId]);
  return rows[0]!.id;
}

describe('persist-then-push across a crash (SIGKILL)', () => {
  test('killed right after the owner commits: the Pending row survives the restart and is delivered; the history is in REST', async () => {
    const { m, alice, bob, chat, client } = await setup();
    const server = await startServer(m, { SERVER_JOBS: 'false' });
    const sent = await server.send(alice.token, chat.id, 'committed, never pushed');
    await server.kill();
    const rowId = await rowOf(m, sent.id);
    assert.deepEqual([(await outboxRow(m.pool, rowId)).status, (await outboxRow(m.pool, rowId)).attempts], ['Pending', 0]);
    m.clock.set(new Date()); // the row was written on the wall clock of the dead process
    assert.equal((await m.dispatch()).dispatched, 1, 'the restarted service delivers it');
    await waitFor('the delivery after the restart', () => client.received.length === 1);
    assert.equal((client.received[0]!.payload as { Seq: number }).Seq, sent.seq);
    const history = await m.call<{ items: { body: string }[] }>(bob.token, 'GET', `/api/messenger/chats/${chat.id}/messages`);
    assert.deepEqual(history.body.items.map((x) => x.body), ['committed, never pushed']);
  });

  test('killed between the claim and the push: the claimed row waits out its backoff, then the restarted service delivers it', async () => {
    const { m, alice, chat, client } = await setup();
    const server = await startServer(m, { SERVER_HOLD_PUSHES: '1' });
    const sent = await server.send(alice.token, chat.id, 'claimed, push lost');
    const rowId = await rowOf(m, sent.id);
    await waitFor('the crashing service to claim the row', async () => (await outboxRow(m.pool, rowId)).attempts === 1);
    await server.kill();
    const row = await outboxRow(m.pool, rowId);
    assert.deepEqual([row.status, row.attempts], ['Pending', 1], 'pre-incremented in the claim, no outcome recorded');
    m.clock.set(new Date(row.next_attempt_at.getTime() - 1));
    assert.equal((await m.dispatch()).claimed, 0, 'not before the backoff the claim set');
    m.clock.set(row.next_attempt_at);
    assert.equal((await m.dispatch()).dispatched, 1);
    await waitFor('the delivery after the restart', () => client.received.length === 1);
    const done = await outboxRow(m.pool, rowId);
    assert.deepEqual([done.status, done.attempts], ['Done', 2]);
  });
});

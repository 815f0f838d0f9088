import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { newUserId, startHubApp, tokenFor } from '../../support/signalr.ts';
import { waitFor } from '../../support/wait.ts';

/**
 * A second, independent SignalR client: Python's signalrcore 1.0.2 (pinned in
 * test/support/python/requirements.txt, installed into .venv by scripts/test.ts). It negotiates
 * without negotiateVersion, so it gets negotiate version 0 and hand-shakes protocol version 0.
 */
const PYTHON = new URL('../../../.venv/bin/python', import.meta.url).pathname;
const SCRIPT = new URL('../../support/python/signalrcore_client.py', import.meta.url).pathname;

type Line = Record<string, unknown> & { event: string };

function startPythonClient(url: string, token: string, protocol: 'json' | 'messagepack', event: string) {
  assert.ok(existsSync(PYTHON), `${PYTHON} is missing: npm test creates it (python3 -m venv .venv, pip install -r test/support/python/requirements.txt)`);
  const child = spawn(PYTHON, [SCRIPT, url, token, protocol, event], { stdio: ['pipe', 'pipe', 'pipe'] });
  const lines: Line[] = [];
  let stderr = '';
  createInterface({ input: child.stdout }).on('line', (line) => lines.push(JSON.parse(line) as Line));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  after(() => child.kill());
  const seen = (e: string) => lines.find((l) => l.event === e);
  return {
    lines,
    stderr: () => stderr,
    seen,
    command: (line: string) => child.stdin.write(`${line}\n`),
    exited,
    waitFor: (e: string) => waitFor(`signalrcore to report '${e}' (stderr: ${stderr.slice(-500)})`, () => seen(e) !== undefined, 20_000),
  };
}

describe('hub with Python signalrcore 1.0.2 (an independent client)', () => {
  for (const protocol of ['json', 'messagepack'] as const) {
    test(`over ${protocol}: connects, receives a chat message, and an unknown hub method is answered with an error completion`, async () => {
      const chatId = newUserId();
      // signalrcore's stop() closes its socket but its reading thread wakes only on the next frame:
      // frequent pings keep the stop short.
      const { hub, url } = await startHubApp({ resolveGroups: async () => [`chat:${chatId}`], pingIntervalMs: 300 });
      const python = startPythonClient(url, await tokenFor(newUserId()), protocol, 'message_received');

      await python.waitFor('open');
      // signalrcore takes its hub protocol version from the negotiate version: 0, which the hub serves.
      assert.deepEqual(python.seen('open'), { event: 'open', protocol, version: 0 });

      const payload = { ChatId: chatId, Seq: 3, Body: 'from the hub', SentAt: '2026-12-01T22:00:00.000Z' };
      await hub.send(`chat:${chatId}`, 'message_received', payload);
      await python.waitFor('received');
      assert.deepEqual(python.seen('received'), { event: 'received', target: 'message_received', arguments: [payload] });

      python.command('invoke NoSuchMethod');
      await python.waitFor('error');
      assert.deepEqual(python.seen('error'), { event: 'error', invocationId: 'python-1', error: "Unknown hub method 'NoSuchMethod'" });

      python.command('stop');
      assert.equal(await python.exited, 0, python.stderr());
      assert.equal(python.lines.filter((l) => l.event === 'received').length, 1);
    });
  }
});

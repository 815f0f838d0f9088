import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { WebSocket } from 'ws';
import { RECORD_SEPARATOR as RS } from '../../../src/platform/realtime/protocol.ts';
import { newUserId, startHubApp, tokenFor } from '../../support/signalr.ts';
import { metricValue } from '../../support/metrics.ts';
import { waitFor } from '../../support/wait.ts';

/** The hub's answers to a socket's handshake request, as ASP.NET Core gives them. */

interface Silent {
  ws: WebSocket;
  /** Every WebSocket message received, as text. */
  answers: string[];
  /** The close code once closed (1006: dropped without a close frame). */
  closeCode(): number | undefined;
  /** Sends its handshake request; resolves with the next answer. */
  handshake(): Promise<string>;
}

/** A raw socket that upgrades and sends nothing until told. */
async function upgradeOnly(wsUrl: string, userId: string): Promise<Silent> {
  const ws = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${await tokenFor(userId)}` } });
  ws.on('error', () => {});
  const answers: string[] = [];
  let code: number | undefined;
  ws.on('message', (data) => answers.push(data.toString()));
  ws.once('close', (c) => (code = c));
  await new Promise((resolve) => ws.once('open', resolve));
  return {
    ws,
    answers,
    closeCode: () => code,
    async handshake() {
      const seen = answers.length;
      ws.send(`{"protocol":"json","version":1}${RS}`);
      await waitFor('the handshake answer', () => answers.length > seen);
      return answers[seen]!;
    },
  };
}

const handshakeError = (error: string) => `${JSON.stringify({ error })}${RS}`;

describe('hub front door: malformed handshakes', () => {
  test('a lone record separator gets a handshake error and the socket is closed', async () => {
    const { wsUrl, registry } = await startHubApp();
    const socket = await upgradeOnly(wsUrl, newUserId());
    socket.ws.send(RS);
    await waitFor('the socket to be closed', () => socket.closeCode() !== undefined);
    assert.deepEqual(socket.answers, [
      handshakeError('An unexpected error occurred during connection handshake. InvalidDataException: The handshake request is empty.'),
    ]);
    assert.equal(await metricValue(registry, 'hub_disconnects_total', { reason: 'handshake_failed' }), 1);
  });
});

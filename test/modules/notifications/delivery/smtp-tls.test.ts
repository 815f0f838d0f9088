import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { SMTPServer } from 'smtp-server';
import { newId } from '../../../../src/platform/time.ts';
import { notificationsWorld, notify, setChannel, stored } from '../support.ts';

/**
 * SMTP without implicit TLS requires STARTTLS (NOTIFICATIONS_SMTP_TLS=starttls, the default) unless
 * NOTIFICATIONS_SMTP_TLS=none allows plain text (local use): against real smtp-servers, one that
 * offers no STARTTLS and one that does.
 */

// The STARTTLS server below uses smtp-server's built-in self-signed certificate.
process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';

/** A real SMTP server offering STARTTLS; records each accepted message with whether its session was encrypted. */
async function startTlsSmtpServer(): Promise<{ port: number; accepted: { notificationId: string | undefined; secure: boolean }[] }> {
  const accepted: { notificationId: string | undefined; secure: boolean }[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['AUTH'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        accepted.push({ notificationId: /^X-PIN-Notification-Id:\s*(.+)$/im.exec(raw)?.[1]?.trim(), secure: session.secure });
        callback();
      });
    },
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  after(() => new Promise<void>((r) => server.close(() => r())));
  return { port: (server.server.address() as { port: number }).port, accepted };
}

const w = await notificationsWorld();
const a = w.main;
await setChannel(a, 'Email', { maxAttempts: 5, retryBackoff: { kind: 'Fixed', delaySeconds: 60 } });
const tls = await startTlsSmtpServer();
const email = () => `buyer-${newId()}@example.org`;

describe('SMTP transport security', () => {
  test('by default a server that offers no STARTTLS gets nothing: the email fails retriably and nothing reaches the server', async () => {
    const strict = await w.replica({ NOTIFICATIONS_SMTP_TLS: 'starttls' });
    const { byChannel } = await notify(a, { channels: ['Email'], email: email() });
    const id = byChannel.get('Email')!.id;
    await strict.runDispatch();
    assert.equal(w.smtp.messagesFor(id).length, 0, 'no message over a plain connection');
    const row = await stored(a.pool, id);
    assert.equal(row.status, 'Failed');
    assert.equal(row.last_error, 'NTF_PROVIDER_TRANSIENT', 'retried once the server or the setting is fixed');
    assert.equal(row.terminal, false);
    assert.equal(row.send_intent_cycle, null, 'the message was never offered: its outcome is known');

    // The explicit local-use setting lets the same server take it (what the other tests rely on).
    const { byChannel: plain } = await notify(a, { channels: ['Email'], email: email() });
    await a.runDispatch();
    assert.equal(w.smtp.messagesFor(plain.get('Email')!.id).length, 1);
  });

  test('by default a server that offers STARTTLS gets the message over an encrypted session', async () => {
    const strict = await w.replica({ NOTIFICATIONS_SMTP_TLS: 'starttls', NOTIFICATIONS_SMTP_PORT: String(tls.port) });
    const { byChannel } = await notify(a, { channels: ['Email'], email: email() });
    const id = byChannel.get('Email')!.id;
    await strict.runDispatch();
    assert.equal((await stored(a.pool, id)).status, 'Sent');
    assert.deepEqual(tls.accepted.filter((m) => m.notificationId === id), [{ notificationId: id, secure: true }]);
  });
});

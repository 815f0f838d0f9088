import { after } from 'node:test';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import { SMTPServer } from 'smtp-server';

/**
 * Real local providers for the notification tests, each able to fail on command:
 * - an HTTP server in the style of SMS gateways and FCM-like push APIs, which — like the real ones —
 *   dedupes by Idempotency-Key: a repeated key answers the first message id and sends nothing new;
 * - a real SMTP server (the `smtp-server` package) that records every message it accepts.
 */

export interface ProviderRequest {
  path: string;
  idempotencyKey: string | undefined;
  authorization: string | undefined;
  body: Record<string, unknown>;
}

export interface Answer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface Gate<T = ProviderRequest> {
  /** Resolves when a request reached the gate (the provider has it, no answer yet). */
  arrived: Promise<T>;
  release(): void;
}

function gateOf<T>(): { gate: Gate<T>; arrived: (r: T) => void; released: Promise<void> } {
  let arrived!: (r: T) => void;
  let release!: () => void;
  const arrivedP = new Promise<T>((r) => (arrived = r));
  const released = new Promise<void>((r) => (release = r));
  return { gate: { arrived: arrivedP, release }, arrived, released };
}

export interface FakeHttpProvider {
  baseUrl: string;
  requests: ProviderRequest[];
  /** Idempotency-Key → provider message id of every message handed to a recipient. */
  delivered: Map<string, string>;
  /** The next `count` requests get this answer instead of acceptance. */
  failNext(count: number, answer: Answer): void;
  /** A standing rule (e.g. by recipient); return undefined to fall through to acceptance. */
  setRule(rule: ((req: ProviderRequest) => Answer | undefined) | null): void;
  /** The next request waits, already accepted or failed, until released. */
  hold(): Gate;
  /** Every answer is delayed this long (a provider under load). */
  setLatency(ms: number): void;
  requestsFor(notificationId: string): ProviderRequest[];
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startHttpProvider(): Promise<FakeHttpProvider> {
  const requests: ProviderRequest[] = [];
  const delivered = new Map<string, string>();
  const failures: Answer[] = [];
  let rule: ((req: ProviderRequest) => Answer | undefined) | null = null;
  const gates: { arrived: (r: ProviderRequest) => void; released: Promise<void> }[] = [];
  let latencyMs = 0;

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    void (async () => {
      const text = await readBody(req);
      const key = req.headers['idempotency-key'];
      const request: ProviderRequest = {
        path: req.url ?? '',
        idempotencyKey: Array.isArray(key) ? key[0] : key,
        authorization: req.headers.authorization,
        body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
      };
      requests.push(request);
      let answer: Answer | undefined = failures.shift() ?? rule?.(request);
      if (!answer) {
        const k = request.idempotencyKey ?? randomUUID();
        // Idempotency: the same key is the same message; nothing new reaches the recipient.
        if (!delivered.has(k)) delivered.set(k, `msg-${randomUUID()}`);
        answer = { status: 200, body: { messageId: delivered.get(k) } };
      }
      if (latencyMs > 0) await new Promise((r) => setTimeout(r, latencyMs));
      const gate = gates.shift();
      if (gate) {
        gate.arrived(request);
        await gate.released;
      }
      res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
      res.end(answer.body === undefined ? '' : JSON.stringify(answer.body));
    })();
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  after(() => new Promise<void>((r) => server.close(() => r())).then(() => server.closeAllConnections()));
  const { port } = server.address() as { port: number };
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    requests,
    delivered,
    failNext(count, answer) {
      for (let i = 0; i < count; i++) failures.push(answer);
    },
    setRule(r) {
      rule = r;
    },
    hold() {
      const { gate, arrived, released } = gateOf<ProviderRequest>();
      gates.push({ arrived, released });
      return gate;
    },
    setLatency(ms) {
      latencyMs = ms;
    },
    requestsFor: (id) => requests.filter((r) => r.body.clientReference === id),
  };
}

export interface ReceivedMail {
  to: string[];
  messageId: string | undefined;
  notificationId: string | undefined;
  raw: string;
}

export interface FakeSmtpServer {
  port: number;
  messages: ReceivedMail[];
  /** The next `count` RCPT commands are refused with this SMTP reply code (4yz temporary, 5yz permanent). */
  failNext(count: number, responseCode: number): void;
  /** RCPT to these addresses is refused with 550 (mailbox unavailable). */
  unknownMailboxes: Set<string>;
  /** The next message is accepted (recorded) but its 250 reply waits until released. */
  hold(): Gate<ReceivedMail>;
  messagesFor(notificationId: string): ReceivedMail[];
}

export async function startSmtpServer(): Promise<FakeSmtpServer> {
  const messages: ReceivedMail[] = [];
  const failures: number[] = [];
  const unknownMailboxes = new Set<string>();
  const gates: { arrived: (m: ReceivedMail) => void; released: Promise<void> }[] = [];
  const refuse = (code: number, text: string) => Object.assign(new Error(text), { responseCode: code });
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onRcptTo(address, _session, callback) {
      const code = failures.shift();
      if (code !== undefined) return callback(refuse(code, code < 500 ? 'try again later' : 'refused'));
      if (unknownMailboxes.has(address.address)) return callback(refuse(550, 'mailbox unavailable'));
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const header = (name: string) => new RegExp(`^${name}:\\s*(.+)$`, 'mi').exec(raw)?.[1]?.trim();
        const mail: ReceivedMail = {
          to: session.envelope.rcptTo.map((r) => r.address),
          messageId: header('Message-ID'),
          notificationId: header('X-PIN-Notification-Id'),
          raw,
        };
        messages.push(mail);
        const gate = gates.shift();
        if (!gate) return callback();
        gate.arrived(mail);
        void gate.released.then(() => callback());
      });
    },
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  after(() => new Promise<void>((r) => server.close(() => r())));
  const port = (server.server.address() as { port: number }).port;
  return {
    port,
    messages,
    failNext(count, code) {
      for (let i = 0; i < count; i++) failures.push(code);
    },
    unknownMailboxes,
    hold() {
      const { gate, arrived, released } = gateOf<ReceivedMail>();
      gates.push({ arrived, released });
      return gate;
    },
    messagesFor: (id) => messages.filter((m) => m.notificationId === id),
  };
}

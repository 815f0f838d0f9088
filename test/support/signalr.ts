import { after } from 'node:test';
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import { HttpTransportType, HubConnectionBuilder, LogLevel, NullLogger, type HubConnection, type HubMessage } from '@microsoft/signalr';
import { MessagePackHubProtocol } from '@microsoft/signalr-protocol-msgpack';
import { WebSocket } from 'ws';
import { signToken } from '../../src/platform/http/auth.ts';
import { createLogger } from '../../src/platform/observability/logger.ts';
import { Registry } from '../../src/platform/observability/metrics.ts';
import { createHub, type Hub, type HubOptions } from '../../src/platform/realtime/hub.ts';
import { hubPlugin } from '../../src/platform/realtime/plugin.ts';
import { RECORD_SEPARATOR } from '../../src/platform/realtime/protocol.ts';

export const TEST_SECRET = 'hub-test-secret-0123456789-0123456789';

export interface HubApp {
  app: FastifyInstance;
  hub: Hub;
  registry: Registry;
  /** http://127.0.0.1:<port>/hubs/messenger */
  url: string;
  wsUrl: string;
}

/** A real Fastify app with the hub plugin, listening on 127.0.0.1:<free port>; closed when the file ends. */
export async function startHubApp(opts: Partial<Omit<HubOptions, 'registry' | 'logger'>> = {}): Promise<HubApp> {
  const registry = new Registry();
  const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');
  const hub = createHub({ secret: TEST_SECRET, registry, logger, ...opts });
  const app = Fastify({ logger: false });
  await app.register(hubPlugin, { hub });
  await app.listen({ host: '127.0.0.1', port: 0 });
  after(() => app.close());
  const { port } = app.server.address() as { port: number };
  return { app, hub, registry, url: `http://127.0.0.1:${port}/hubs/messenger`, wsUrl: `ws://127.0.0.1:${port}/hubs/messenger` };
}

export const newUserId = (): string => randomUUID();

export const tokenFor = (userId: string): Promise<string> => signToken({ userId, admin: false }, TEST_SECRET);

export interface Received {
  event: string;
  payload: unknown;
}

export interface TestClient {
  connection: HubConnection;
  received: Received[];
  closedWith: Error | undefined;
  closed: boolean;
}

/** The official @microsoft/signalr client, started; it records every invocation of `events`. */
export async function connectClient(
  url: string,
  token: string | undefined,
  opts: { skipNegotiation?: boolean; events?: string[]; protocol?: 'json' | 'messagepack' } = {},
): Promise<TestClient> {
  const builder = new HubConnectionBuilder()
    .withUrl(url, {
      ...(token === undefined ? {} : { accessTokenFactory: () => token }),
      skipNegotiation: opts.skipNegotiation ?? false,
      transport: HttpTransportType.WebSockets,
    })
    .configureLogging(LogLevel.None);
  // The official MessagePack protocol package: binary frames from the handshake on.
  if (opts.protocol === 'messagepack') builder.withHubProtocol(new MessagePackHubProtocol());
  const connection = builder.build();
  const client: TestClient = { connection, received: [], closedWith: undefined, closed: false };
  for (const event of opts.events ?? []) connection.on(event, (payload: unknown) => client.received.push({ event, payload }));
  connection.onclose((err) => {
    client.closed = true;
    client.closedWith = err;
  });
  await connection.start();
  after(() => connection.stop());
  return client;
}

export interface RawClient {
  ws: WebSocket;
  /** Every record received after the handshake response, parsed. */
  records: Array<Record<string, unknown>>;
  closed: Promise<{ code: number }>;
  isClosed(): boolean;
}

/** A bare `ws` client that does the SignalR handshake by hand, for behaviour the official client hides. */
export async function connectRaw(wsUrl: string, token: string): Promise<RawClient> {
  const ws = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${token}` } });
  let isClosed = false;
  const closed = new Promise<{ code: number }>((resolve) =>
    ws.once('close', (code) => {
      isClosed = true;
      resolve({ code });
    }),
  );
  ws.on('error', () => {});
  const records: Array<Record<string, unknown>> = [];
  let handshakeDone: (value: unknown) => void = () => {};
  const handshake = new Promise((resolve) => (handshakeDone = resolve));
  let pending = '';
  ws.on('message', (data) => {
    const parts = (pending + data.toString()).split(RECORD_SEPARATOR);
    pending = parts.pop() ?? '';
    for (const part of parts) {
      const message = JSON.parse(part) as Record<string, unknown>;
      if (Object.keys(message).length === 0) handshakeDone(undefined);
      else records.push(message);
    }
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
  });
  ws.send(`{"protocol":"json","version":1}${RECORD_SEPARATOR}`);
  await handshake;
  after(() => ws.terminate());
  return { ws, records, closed, isClosed: () => isClosed };
}


export interface RawMsgpackClient {
  ws: WebSocket;
  /** Every message received after the handshake response, as the official client's MessagePack protocol parses it. */
  messages: HubMessage[];
  /** Whether every WebSocket message after the handshake came as a binary frame. */
  allBinary(): boolean;
  closed: Promise<{ code: number }>;
  isClosed(): boolean;
}

const officialMsgpack = new MessagePackHubProtocol();

/** A bare `ws` client that hand-shakes MessagePack version 1 by hand and reads frames with the official parser. */
export async function connectRawMsgpack(wsUrl: string, token: string): Promise<RawMsgpackClient> {
  const ws = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${token}` } });
  let isClosed = false;
  let binary = true;
  const closed = new Promise<{ code: number }>((resolve) =>
    ws.once('close', (code) => {
      isClosed = true;
      resolve({ code });
    }),
  );
  ws.on('error', () => {});
  const messages: HubMessage[] = [];
  let handshakeDone: (response: string) => void = () => {};
  const handshake = new Promise<string>((resolve) => (handshakeDone = resolve));
  let first = true;
  ws.on('message', (data: Buffer, isBinary) => {
    if (first) {
      first = false;
      return handshakeDone(`${isBinary ? 'binary' : 'text'}:${data.toString()}`);
    }
    binary &&= isBinary;
    const bytes = data.buffer.slice(data.byteOffset, data.byteOffset + data.length) as ArrayBuffer;
    messages.push(...officialMsgpack.parseMessages(bytes, NullLogger.instance));
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
  });
  ws.send(`{"protocol":"messagepack","version":1}${RECORD_SEPARATOR}`);
  const response = await handshake;
  // ASP.NET Core answers a MessagePack handshake in a binary frame; clients may parse it with their binary reader.
  if (response !== `binary:{}${RECORD_SEPARATOR}`) throw new Error(`unexpected handshake response ${JSON.stringify(response)}`);
  after(() => ws.terminate());
  return { ws, messages, allBinary: () => binary, closed, isClosed: () => isClosed };
}

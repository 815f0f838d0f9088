import { after } from 'node:test';
import net from 'node:net';

/**
 * A TCP proxy in front of a server (the app, PostgreSQL), so a test can break the network under a
 * real client: cut every connection, refuse new ones, let the network go silent (bytes stop,
 * connections stay open), or stop reading what the server sends on WebSockets (a stuck client).
 */
export interface TcpProxy {
  port: number;
  /** Drops every open connection at once (both sides). */
  cut(): void;
  /** While blocked, new connections are dropped on arrival. */
  block(): void;
  unblock(): void;
  /** Cut and block: a query fails at once. */
  refuse(): void;
  /** Stops forwarding both ways on every connection, open or new; nothing is closed: a query hangs. */
  hang(): void;
  /** Unblocks and forwards again on every connection (what a hung one buffered flows on). */
  restore(): void;
  /** Stops reading from the server on every open WebSocket: the server's send buffers fill up (HTTP keeps flowing). */
  stall(): void;
  /** Reads again (the stuck client wakes up): buffered bytes, then the server's close, reach the client. */
  resume(): void;
  connections(): number;
}

type Pair = [client: net.Socket, upstream: net.Socket];

const flow = ([client, upstream]: Pair) => {
  client.pipe(upstream);
  upstream.pipe(client);
  client.resume();
  upstream.resume();
};

const silence = ([client, upstream]: Pair) => {
  client.unpipe(upstream);
  upstream.unpipe(client);
  client.pause();
  upstream.pause();
};

export async function startTcpProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  const pairs = new Set<Pair>();
  const websockets = new WeakSet<net.Socket>();
  let blocked = false;
  let hung = false;
  const server = net.createServer((client) => {
    if (blocked) return void client.destroy();
    const upstream = net.connect(targetPort, targetHost);
    const pair: Pair = [client, upstream];
    pairs.add(pair);
    const close = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
    client.once('data', (chunk: Buffer) => {
      if (/^upgrade:\s*websocket/im.test(chunk.toString('latin1'))) websockets.add(upstream);
    });
    if (hung) silence(pair);
    else flow(pair);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  after(() => {
    for (const [a, b] of pairs) (a.destroy(), b.destroy());
    server.close();
  });
  const cut = () => {
    for (const [a, b] of [...pairs]) (a.destroy(), b.destroy());
  };
  return {
    port: (server.address() as net.AddressInfo).port,
    cut,
    block: () => void (blocked = true),
    unblock: () => void (blocked = false),
    refuse: () => {
      blocked = true;
      cut();
    },
    hang: () => {
      hung = true;
      for (const pair of pairs) silence(pair);
    },
    restore: () => {
      blocked = false;
      if (hung) for (const pair of pairs) flow(pair);
      hung = false;
    },
    stall: () => {
      for (const [, upstream] of pairs) {
        if (!websockets.has(upstream)) continue;
        upstream.unpipe();
        upstream.pause();
      }
    },
    resume: () => {
      for (const [client, upstream] of pairs) {
        if (!websockets.has(upstream)) continue;
        upstream.pipe(client);
        upstream.resume();
      }
    },
    connections: () => pairs.size,
  };
}

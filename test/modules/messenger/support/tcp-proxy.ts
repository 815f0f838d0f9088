import { after } from 'node:test';
import net from 'node:net';

/**
 * A TCP proxy in front of the app, so a test can break the network under a real client: cut every
 * connection, refuse new ones for a while, or stop reading what the server sends (a stuck client).
 */
export interface TcpProxy {
  port: number;
  /** Drops every open connection at once (both sides). */
  cut(): void;
  /** While blocked, new connections are dropped on arrival. */
  block(): void;
  unblock(): void;
  /** Stops reading from the server on every open WebSocket: the server's send buffers fill up (HTTP keeps flowing). */
  stall(): void;
  /** Reads again (the stuck client wakes up): buffered bytes, then the server's close, reach the client. */
  resume(): void;
  connections(): number;
}

export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  const pairs = new Set<[net.Socket, net.Socket]>();
  const websockets = new WeakSet<net.Socket>();
  let blocked = false;
  const server = net.createServer((client) => {
    if (blocked) return void client.destroy();
    const upstream = net.connect(targetPort, '127.0.0.1');
    const pair: [net.Socket, net.Socket] = [client, upstream];
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
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  after(() => {
    for (const [a, b] of pairs) (a.destroy(), b.destroy());
    server.close();
  });
  return {
    port: (server.address() as net.AddressInfo).port,
    cut: () => {
      for (const [a, b] of [...pairs]) (a.destroy(), b.destroy());
    },
    block: () => void (blocked = true),
    unblock: () => void (blocked = false),
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

import { after } from 'node:test';
import net from 'node:net';

/**
 * A TCP proxy in front of PostgreSQL, so a test can take the database away from a real pool: the
 * network goes silent (bytes stop, connections stay open: a query hangs) or connections are
 * refused (open ones dropped, new ones closed on arrival: a query fails at once).
 */
export interface PgProxy {
  port: number;
  /** Stops forwarding both ways on every connection, open or new; nothing is closed. */
  hang(): void;
  /** Drops every open connection and closes new ones on arrival. */
  refuse(): void;
  /** Forwards again (what a hung connection buffered flows on). */
  restore(): void;
}

export async function startPgProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<PgProxy> {
  const pairs = new Set<[net.Socket, net.Socket]>();
  let mode: 'up' | 'hang' | 'refuse' = 'up';
  const flow = ([client, upstream]: [net.Socket, net.Socket]) => {
    client.pipe(upstream);
    upstream.pipe(client);
  };
  const stop = ([client, upstream]: [net.Socket, net.Socket]) => {
    client.unpipe(upstream);
    upstream.unpipe(client);
    client.pause();
    upstream.pause();
  };
  const server = net.createServer((client) => {
    if (mode === 'refuse') return void client.destroy();
    const upstream = net.connect(targetPort, targetHost);
    const pair: [net.Socket, net.Socket] = [client, upstream];
    pairs.add(pair);
    const close = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
    if (mode === 'up') flow(pair);
    else stop(pair);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  after(() => {
    for (const [a, b] of pairs) (a.destroy(), b.destroy());
    server.close();
  });
  return {
    port: (server.address() as net.AddressInfo).port,
    hang: () => {
      mode = 'hang';
      for (const pair of pairs) stop(pair);
    },
    refuse: () => {
      mode = 'refuse';
      for (const [a, b] of [...pairs]) (a.destroy(), b.destroy());
    },
    restore: () => {
      if (mode === 'hang') for (const pair of pairs) flow(pair);
      mode = 'up';
    },
  };
}

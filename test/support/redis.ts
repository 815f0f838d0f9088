import { after } from 'node:test';
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { waitFor } from './wait.ts';

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function spawnRedis(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  after(() => void child.kill('SIGKILL'));
  await waitFor(
    'redis-server to listen',
    () =>
      new Promise<boolean>((resolve) => {
        const s = net.connect(port, '127.0.0.1', () => (s.end(), resolve(true)));
        s.on('error', () => resolve(false));
      }),
  );
  return child;
}

export interface PrivateRedis {
  url: string;
  /** The running redis-server (a new one after restart()). */
  readonly process: ChildProcess;
  /** SIGKILL, resolved once it has exited. */
  kill(): Promise<void>;
  /** A fresh, empty redis-server on the same port. */
  restart(): Promise<void>;
}

/**
 * A private redis-server a test may kill, pause or restart (the shared one from scripts/services.sh
 * belongs to every file running in parallel). Killed at file end if still running.
 */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  let child = await spawnRedis(port);
  return {
    url: `redis://127.0.0.1:${port}`,
    get process() {
      return child;
    },
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    },
    async restart() {
      child = await spawnRedis(port);
    },
  };
}

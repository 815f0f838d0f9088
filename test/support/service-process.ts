import { after } from 'node:test';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import type { ServiceTuning } from '../../src/service.ts';
import { SECURE_SECRETS } from './secure-env.ts';

/** A port nobody listens on right now (the kernel's pick, released at once). */
export { freeLocalPort as freePort } from '../../src/platform/db/embedded.ts';

export interface ServiceProcess {
  child: ChildProcess;
  /** stdout and stderr as they came. */
  log: { text: string; stderr: string };
  exited: Promise<[number | null, NodeJS.Signals | null]>;
  /** The JSON log lines (non-JSON lines, e.g. npm's banner, are left out). */
  lines(): Record<string, unknown>[];
}

/**
 * The command of the service with some fixed values shortened (test/support/service-entry.ts: the
 * same start-up as src/main.ts, the values handed in code), for `startService(env, tunedService(…))`.
 */
export function tunedService(tuning: ServiceTuning): string[] {
  return [process.execPath, 'test/support/service-entry.ts', JSON.stringify(tuning)];
}

/**
 * The service as a child process, as an orchestrator would run it: `node src/main.ts` by default, or
 * any command (e.g. `npm start`, or `tunedService(…)`). Killed with SIGKILL at file end if it is still running.
 */
export function startService(env: Record<string, string | undefined>, command = [process.execPath, 'src/main.ts']): ServiceProcess {
  const child = spawn(command[0]!, command.slice(1), {
    // On a real database (DATABASE_URL) the service refuses the shipped secrets.
    env: { ...process.env, PORT: '0', SHUTDOWN_TIMEOUT: '10s', LOG_LEVEL: 'info', ...SECURE_SECRETS, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const log = { text: '', stderr: '' };
  child.stdout!.on('data', (c) => (log.text += c));
  child.stderr!.on('data', (c) => {
    log.text += c;
    log.stderr += c;
  });
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return {
    child,
    log,
    exited,
    lines: () =>
      log.text
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .flatMap((l) => {
          try {
            return [JSON.parse(l) as Record<string, unknown>];
          } catch {
            return [];
          }
        }),
  };
}

/**
 * Live processes that belong to a data directory: its name on their command line (postgres -D …) or
 * in their environment (the service started with EMBEDDED_PG_DATA_DIR=…). Zombies count as gone.
 */
export function processesOf(dataDir: string): { pid: number; cmdline: string }[] {
  const found: { pid: number; cmdline: string }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (/^State:\s*Z/m.test(readFileSync(`/proc/${entry}/status`, 'utf8'))) continue;
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
      const environ = readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0');
      if (cmdline.includes(dataDir) || environ.includes(`EMBEDDED_PG_DATA_DIR=${dataDir}`)) found.push({ pid: Number(entry), cmdline });
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found;
}

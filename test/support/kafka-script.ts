import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** `bash scripts/kafka.sh up|down` with `env` on top of the test's own: its exit code and everything it printed. */
export function kafkaSh(cmd: 'up' | 'down', env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  const child = spawn('bash', ['scripts/kafka.sh', cmd], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => (out += c));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, out })));
}

/** Exited: no /proc entry, or a zombie with no thread left (a stopped JVM's threads, and its ports, go last). */
export const processGone = (pid: number): boolean => {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return /^State:\s*Z/m.test(status) && /^Threads:\s*1$/m.test(status);
  } catch {
    return true;
  }
};

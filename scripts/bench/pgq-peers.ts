/**
 * The outbox publisher's PostgreSQL-queue peers (the `pgq` folder PGQ_PEERS_DIR names: raw `FOR UPDATE SKIP LOCKED`,
 * graphile-worker), run in the same session as scripts/bench/outbox-publish.ts by `ab.ts --peers`,
 * so "% of raw SKIP LOCKED" compares runs that shared the machine's load. The peers' folder is
 * read-only: it is copied to PGQ_WORK_DIR (/tmp/pin-pgq-peers) and its pinned packages installed
 * there once (`npm ci`); their PostgreSQL (embedded, durable defaults, port 55433) runs only while
 * the peers do.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync } from 'node:fs';

const SOURCE = process.env.PGQ_PEERS_DIR ?? '';
const WORK = process.env.PGQ_WORK_DIR ?? '/tmp/pin-pgq-peers';

/** One peer run: the script and its arguments (the shapes of the peers' run-all.sh). */
export const PEER_RUNS: { name: string; args: string[] }[] = [
  { name: 'raw-skip-locked conns=1', args: ['bench-raw.mjs', '--n=100000', '--conns=1', '--batch=2000'] },
  { name: 'raw-skip-locked conns=4', args: ['bench-raw.mjs', '--n=100000', '--conns=4', '--batch=2000'] },
  { name: 'graphile-worker batched throughput', args: ['bench-graphile.mjs', '--mode=throughput', '--n=20000', '--concurrency=10', '--variant=batched'] },
  { name: 'graphile-worker latency', args: ['bench-graphile.mjs', '--mode=latency', '--n=200', '--gap=20', '--concurrency=10', '--variant=batched'] },
];

/** Copies and installs the peers once; starts their PostgreSQL. Answers a stop function. */
export async function startPeers(): Promise<() => void> {
  if (!SOURCE || !existsSync(`${SOURCE}/bench-raw.mjs`)) throw new Error(`no pgq peers at ${JSON.stringify(SOURCE)}: set PGQ_PEERS_DIR to the peers' pgq folder`);
  if (!existsSync(`${WORK}/node_modules/graphile-worker`)) {
    cpSync(SOURCE, WORK, { recursive: true, filter: (src) => !src.includes('/results') });
    const install = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: WORK, stdio: ['ignore', 2, 2] });
    if (install.status !== 0) throw new Error(`npm ci in ${WORK} failed (exit ${install.status})`);
  }
  const server: ChildProcess = spawn(process.execPath, ['pg-server.mjs'], { cwd: WORK, env: { ...process.env, PGDATA_DIR: '/tmp/pin-pgq-pgdata' }, stdio: ['ignore', 'pipe', 2] });
  await new Promise<void>((resolve, reject) => {
    let seen = '';
    server.stdout!.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes('READY')) resolve();
    });
    server.on('exit', (code) => reject(new Error(`the peers' PostgreSQL exited (${code}) before it was ready`)));
  });
  return () => void server.kill('SIGTERM');
}

/** Runs one peer; answers its JSON line (the peers print one per run). */
export function runPeer(run: { name: string; args: string[] }): Record<string, unknown> {
  const res = spawnSync(process.execPath, run.args, { cwd: WORK, env: { ...process.env, RESULTS_DIR: 'results-pin' }, stdio: ['ignore', 'pipe', 2], encoding: 'utf8', timeout: 900_000 });
  if (res.status !== 0) throw new Error(`peer ${run.name} failed (exit ${res.status})`);
  const line = res.stdout.trim().split('\n').filter((l) => l.startsWith('{')).at(-1);
  if (!line) throw new Error(`peer ${run.name} printed no JSON line`);
  return { peer: run.name, ...(JSON.parse(line) as Record<string, unknown>) };
}

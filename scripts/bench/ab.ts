/**
 * A/B of the two Kafka clients on one bench: `node scripts/bench/ab.ts scripts/bench/outbox-publish.ts`
 * runs it BENCH_ROUNDS times (3) per client, alternating kafkajs and @platformatic/kafka on the same
 * broker (KAFKA_CLIENT set per run), so a machine that gets busier or quieter meanwhile weighs on
 * both alike. Each run's one JSON line goes to stdout as it is (its `client` field says which);
 * progress goes to stderr. Other BENCH_* settings pass through to every run.
 * `--peers` also runs, in every round, the PostgreSQL-queue peers (pgq-peers.ts: raw SKIP LOCKED and
 * graphile-worker), each as a line with its `peer` name. The last line is the summary: per client
 * and per peer, the median of every numeric figure over the rounds, and for the outbox bench the
 * drain rate as a share of raw SKIP LOCKED's best (`percentOfRaw`).
 */
import { spawnSync } from 'node:child_process';
import { PEER_RUNS, runPeer, startPeers } from './pgq-peers.ts';

const script = process.argv.slice(2).find((a) => !a.startsWith('--'));
const withPeers = process.argv.includes('--peers');
if (!script) {
  process.stderr.write('usage: node scripts/bench/ab.ts <bench script> [--peers]\n');
  process.exit(2);
}
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const lines = new Map<string, Record<string, unknown>[]>();
const keep = (group: string, line: Record<string, unknown>) => {
  lines.set(group, [...(lines.get(group) ?? []), line]);
  process.stdout.write(`${JSON.stringify(line)}\n`);
};

const stopPeers = withPeers ? await startPeers() : () => undefined;
try {
  for (let round = 1; round <= rounds; round++) {
    for (const client of ['kafkajs', 'platformatic']) {
      process.stderr.write(`[ab] round ${round}/${rounds}: ${client}\n`);
      const run = spawnSync(process.execPath, [script], { env: { ...process.env, KAFKA_CLIENT: client }, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
      if (run.status !== 0) throw new Error(`${client} run failed (exit ${run.status})`);
      keep(client, { round, ...(JSON.parse(run.stdout.trim().split('\n').at(-1) ?? '') as object) });
    }
    if (!withPeers) continue;
    for (const peer of PEER_RUNS) {
      process.stderr.write(`[ab] round ${round}/${rounds}: peer ${peer.name}\n`);
      keep(peer.name, { round, ...runPeer(peer) });
    }
  }
} finally {
  stopPeers();
}

/** Every numeric leaf of a line, by its dotted path. */
function numbers(value: unknown, path = '', out = new Map<string, number>()): Map<string, number> {
  if (typeof value === 'number' && path !== 'round') out.set(path, value);
  else if (value && typeof value === 'object' && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value)) numbers(v, path ? `${path}.${k}` : k, out);
  }
  return out;
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
const medians: Record<string, Record<string, number>> = {};
for (const [group, runs] of lines) {
  const all = runs.map((r) => numbers(r));
  medians[group] = Object.fromEntries([...all[0]!.keys()].map((k) => [k, median(all.map((m) => m.get(k)).filter((v): v is number => v !== undefined))]));
}
const rawBest = Math.max(...[...lines.keys()].filter((g) => g.startsWith('raw-skip-locked')).map((g) => medians[g]!.rowsPerSec ?? 0));
const percentOfRaw = Number.isFinite(rawBest) && rawBest > 0
  ? Object.fromEntries(['kafkajs', 'platformatic'].map((c) => [c, Math.round(((medians[c]?.['throughput.eventsPerSec'] ?? NaN) / rawBest) * 100)]))
  : undefined;
process.stdout.write(`${JSON.stringify({ summary: 'median of rounds', bench: script, rounds, medians, ...(percentOfRaw ? { rawSkipLockedBestPerSec: rawBest, percentOfRaw } : {}) })}\n`);

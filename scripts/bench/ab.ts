/**
 * A/B of the two Kafka clients on one bench: `node scripts/bench/ab.ts scripts/bench/outbox-publish.ts`
 * runs it BENCH_ROUNDS times (3) per client, alternating kafkajs and @platformatic/kafka on the same
 * broker (KAFKA_CLIENT set per run), so a machine that gets busier or quieter meanwhile weighs on
 * both alike. Each run's one JSON line goes to stdout as it is (its `client` field says which);
 * progress goes to stderr. Other BENCH_* settings pass through to every run.
 */
import { spawnSync } from 'node:child_process';

const script = process.argv[2];
if (!script) {
  process.stderr.write('usage: node scripts/bench/ab.ts <bench script>\n');
  process.exit(2);
}
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
for (let round = 1; round <= rounds; round++) {
  for (const client of ['kafkajs', 'platformatic']) {
    process.stderr.write(`[ab] round ${round}/${rounds}: ${client}\n`);
    const run = spawnSync(process.execPath, [script], { env: { ...process.env, KAFKA_CLIENT: client }, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
    if (run.status !== 0) {
      process.stderr.write(`[ab] ${client} run failed (exit ${run.status})\n`);
      process.exit(1);
    }
    const line = run.stdout.trim().split('\n').at(-1) ?? '';
    process.stdout.write(`${JSON.stringify({ round, ...(JSON.parse(line) as object) })}\n`);
  }
}

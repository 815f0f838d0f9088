/**
 * Writes a new SQL migration for one part from its Drizzle schema:
 *   npm run db:generate -- platform add_job_columns
 *   npm run db:generate -- user-activity sessions
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const [part, name] = process.argv.slice(2);
if (!part || !name || !/^[a-z0-9_]+$/.test(name)) {
  process.stderr.write('usage: npm run db:generate -- <platform|module> <snake_case_name>\n');
  process.exit(2);
}
if (part !== 'platform' && !existsSync(`src/modules/${part}/schema.ts`)) {
  process.stderr.write(`no src/modules/${part}/schema.ts\n`);
  process.exit(2);
}
const res = spawnSync('npx', ['drizzle-kit', 'generate', '--name', name], {
  stdio: 'inherit',
  env: { ...process.env, DRIZZLE_PART: part },
});
process.exit(res.status ?? 1);

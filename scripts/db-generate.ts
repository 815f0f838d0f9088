/**
 * Writes a new SQL migration for one part from its Drizzle schema:
 *   npm run db:generate -- platform add_job_columns
 *   npm run db:generate -- user-activity sessions
 *   npm run db:generate -- messenger.realtime outbox   (src/modules/messenger/schema.realtime.ts)
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const [part, name] = process.argv.slice(2);
if (!part || !name || !/^[a-z0-9_]+$/.test(name)) {
  process.stderr.write('usage: npm run db:generate -- <platform|module> <snake_case_name>\n');
  process.exit(2);
}
const [module, sub] = part.split('.');
const schemaFile = `src/modules/${module}/schema${sub ? `.${sub}` : ''}.ts`;
if (part !== 'platform' && !existsSync(schemaFile)) {
  process.stderr.write(`no ${schemaFile}\n`);
  process.exit(2);
}
const res = spawnSync('npx', ['drizzle-kit', 'generate', '--name', name], {
  stdio: 'inherit',
  env: { ...process.env, DRIZZLE_PART: part },
});
process.exit(res.status ?? 1);

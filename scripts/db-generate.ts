/**
 * Writes a new SQL migration for one part from its Drizzle schema:
 *   npm run db:generate -- platform add_job_columns
 *   npm run db:generate -- user-activity sessions
 *   npm run db:generate -- messenger.realtime chats   (the files drizzle.config.ts lists for the part)
 *   npm run db:generate -- push outbox_column        (the kernel's push part: src/platform/push/push-schema.ts)
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { PART_SCHEMAS } from '../drizzle.config.ts';

const [part, name] = process.argv.slice(2);
if (!part || !name || !/^[a-z0-9_]+$/.test(name)) {
  process.stderr.write('usage: npm run db:generate -- <platform|module> <snake_case_name>\n');
  process.exit(2);
}
const schemaFile = `src/modules/${part}/schema.ts`;
if (!PART_SCHEMAS[part] && !existsSync(schemaFile)) {
  process.stderr.write(`no ${schemaFile}, and drizzle.config.ts lists no schema files for part ${part}\n`);
  process.exit(2);
}
const res = spawnSync('npx', ['drizzle-kit', 'generate', '--name', name], {
  stdio: 'inherit',
  env: { ...process.env, DRIZZLE_PART: part },
});
process.exit(res.status ?? 1);

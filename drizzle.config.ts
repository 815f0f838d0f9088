import { defineConfig } from 'drizzle-kit';

/**
 * Each part owns its migrations: `drizzle/platform/` for the shared kernel's tables and
 * `drizzle/<part>/` for each bounded context's, so modules evolve their tables independently.
 * `npm run db:generate -- <part> <name>` sets DRIZZLE_PART. A part not listed here is a module
 * whose tables are all in src/modules/<part>/schema.ts.
 */
const M = './src/modules/messenger';
export const PART_SCHEMAS: Record<string, string[]> = {
  platform: ['./src/platform/db/platform-schema.ts', './src/platform/*/schema.ts'],
  // Seed 002: the user replica and contact search, with the module's pgSchema('messenger'); and the
  // files of File messages.
  messenger: [`${M}/schema.ts`, `${M}/files/schema.ts`],
  // Seed 000: chats, messages, contacts and calls, migrating on their own after the replica. These
  // files import the module's pgSchema without re-exporting it.
  'messenger.realtime': [`${M}/chats/schema.ts`, `${M}/messages/schema.ts`, `${M}/contacts/schema.ts`, `${M}/calls/schema.ts`],
  // The kernel's push path (seed 000's realtime outbox and the event stream): a kernel part with its
  // own schema `push`, applied after every module's part (migrationParts), since its tables began in
  // the messenger's part and its first migration moves them here.
  push: ['./src/platform/push/push-schema.ts'],
};

const part = process.env.DRIZZLE_PART ?? 'platform';

export default defineConfig({
  dialect: 'postgresql',
  schema: PART_SCHEMAS[part] ?? [`./src/modules/${part}/schema.ts`],
  out: `./drizzle/${part}`,
  casing: 'snake_case',
});

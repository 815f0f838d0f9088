import { defineConfig } from 'drizzle-kit';

/**
 * Each part owns its migrations: `drizzle/platform/` for the shared kernel's tables and
 * `drizzle/<module>/` for each bounded context's schema, so modules evolve their tables
 * independently. `npm run db:generate -- <platform|module> <name>` sets DRIZZLE_PART.
 */
const part = process.env.DRIZZLE_PART ?? 'platform';
// A module may split its tables into parts that migrate on their own: part `messenger.realtime` is
// src/modules/messenger/schema.realtime.ts (importing, not re-exporting, the module's pgSchema).
const [module, sub] = part.split('.');
const schema =
  part === 'platform'
    ? ['./src/platform/db/platform-schema.ts', './src/platform/*/schema.ts']
    : [`./src/modules/${module}/schema${sub ? `.${sub}` : ''}.ts`];

export default defineConfig({
  dialect: 'postgresql',
  schema,
  out: `./drizzle/${part}`,
  casing: 'snake_case',
});

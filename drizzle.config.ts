import { defineConfig } from 'drizzle-kit';

// `npm run db:generate` writes a new SQL migration into drizzle/ from the schema files below.
export default defineConfig({
  dialect: 'postgresql',
  schema: ['./src/platform/db/platform-schema.ts', './src/platform/*/schema.ts', './src/modules/*/schema.ts'],
  out: './drizzle',
  casing: 'snake_case',
});

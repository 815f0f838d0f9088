import { pgSchema } from 'drizzle-orm/pg-core';

/** The shared kernel's own PostgreSQL schema: outbox, inbox, job state. Modules use their own. */
export const platformSchema = pgSchema('platform');

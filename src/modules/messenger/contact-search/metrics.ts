import { counter, dbGauge, type Registry } from '../../../platform/observability/index.ts';
import type { Db } from '../../../platform/db/index.ts';
import { countPending } from './sql.ts';

/** Metrics of the contact search index (seed 002 names where it gives them, the messenger_ prefix otherwise). */
export function createContactSearchMetrics(registry: Registry, db: Db) {
  return {
    indexFailures: counter(registry, {
      name: 'messenger_contact_search_index_failures_total',
      help: 'Search documents the index refused or could not take (retried by the indexer, reconciled by the rebuild job), by stage',
      labelNames: ['stage'] as const,
    }),
    // The database is down: /health says so; the scrape keeps the last value.
    pending: dbGauge(registry, {
      name: 'messenger_contact_search_pending_documents',
      help: 'Replica rows whose search document waits to be written (grows while the index is down)',
      read: () => countPending(db),
    }),
  };
}

export type ContactSearchMetrics = ReturnType<typeof createContactSearchMetrics>;

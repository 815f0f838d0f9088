import { createPostgresContactSearch } from '../../../../src/modules/messenger/contact-search/postgres-adapter.ts';
import { contactSearchContract } from './contract.ts';

/** The contact search contract against the PostgreSQL adapter (used when ELASTICSEARCH_URL is unset). */
contactSearchContract('PostgreSQL adapter', async (db) => createPostgresContactSearch(db, { now: () => new Date() }));

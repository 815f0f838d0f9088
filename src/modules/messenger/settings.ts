import { Type } from '@sinclair/typebox';
import type { SettingsOf } from '../../platform/types/index.ts';
import type { messengerRealtimeSettings } from './settings.realtime.ts';

/**
 * Settings of the messenger context's user replica and contact search (seed 002), spread into the
 * service's one settings schema by src/config.ts. Imports nothing from config.ts, so there is no cycle.
 */
export const messengerSettings = {
  ELASTICSEARCH_URL: Type.Optional(
    Type.String({
      pattern: '^https?://',
      description: 'Elasticsearch (8.x) for the contact search index; unset = the PostgreSQL search adapter',
    }),
  ),
  MESSENGER_CONTACT_SEARCH_INDEX: Type.String({
    default: 'messenger-contacts',
    pattern: '^[a-z0-9][a-z0-9._-]{0,199}$',
    description: 'Elasticsearch index holding MessengerContactSearchDocument (created at start when missing)',
  }),
  MESSENGER_CONTACT_SEARCH_REQUEST_TIMEOUT_MS: Type.Integer({
    default: 5000,
    minimum: 100,
    maximum: 120_000,
    description: 'Longest Elasticsearch request; a timeout counts as an indexing failure and is retried',
  }),
  MESSENGER_CONTACT_SEARCH_INDEX_INTERVAL_MS: Type.Integer({
    default: 1000,
    minimum: 100,
    description: 'Contact search indexer timer (a committed replica change also wakes it through NOTIFY)',
  }),
  MESSENGER_CONTACT_SEARCH_INDEX_BATCH_SIZE: Type.Integer({
    default: 500,
    minimum: 1,
    maximum: 10_000,
    description: 'Replica rows sent to the search index per bulk request',
  }),
  MESSENGER_CONTACT_SEARCH_RETRY_MAX_MS: Type.Integer({
    default: 60_000,
    minimum: 1000,
    description: 'A document whose indexing failed is retried after 1 s, doubling up to this',
  }),
  MESSENGER_CONTACT_SEARCH_REBUILD_CRON: Type.String({
    default: '30 3 * * *',
    minLength: 9,
    description: 'MessengerContactSearchRebuildJob schedule (cron, UTC): reconciles the whole index with the replica',
  }),
  MESSENGER_CONTACT_SEARCH_REBUILD_BATCH_SIZE: Type.Integer({
    default: 1000,
    minimum: 10,
    maximum: 10_000,
    description: 'Replica rows per bulk request of the rebuild job (progress is logged per batch)',
  }),
  MESSENGER_USER_SYNC_PARTITIONS_CONCURRENTLY: Type.Integer({
    default: 6,
    minimum: 1,
    maximum: 64,
    description: 'Partitions of pin.identity.users.v1 the user replica consumer handles in parallel (each in order)',
  }),
  MESSENGER_PHONE_DEFAULT_REGION: Type.String({
    default: 'RU',
    pattern: '^[A-Z]{2}$',
    description: 'Country (ISO 3166 alpha-2) assumed for a phone number typed without +country code',
  }),
};

/** Every messenger setting (user replica, contact search, realtime), as the module receives them. */
export type MessengerSettings = SettingsOf<typeof messengerSettings & typeof messengerRealtimeSettings>;

import { MEDIA_TOKEN_TTL_SECONDS, TURN_TTL_SECONDS, type MediaJoinSettings } from './calls/media-join.ts';
import { INDEX_BATCH_SIZE, INDEX_MAX_RUN_MS, type IndexerSettings } from './contact-search/indexer.job.ts';
import type { MessengerSettings, MessengerTuning } from './settings.ts';

/**
 * What the messenger's parts take, in their own words: the one place its settings (settings.ts:
 * defaults, bounds and units, validated once by loadConfig) and its tuning become options. The parts
 * read these, never a setting's name.
 */
export interface MessengerOptions {
  /** A phone number without a country code is read in this region (E.164). */
  phoneRegion: string;
  /** Per-user requests per minute (0 = no limit). */
  rateLimits: { contactSearches: number; contactRequests: number; callInvites: number; chatChanges: number; messageSends: number };
  /** Elasticsearch when `url` is set, else the PostgreSQL adapter. */
  contactSearch: { url: string | undefined; index: string; requestTimeoutMs: number; rebuildCron: string };
  contactIndexer: IndexerSettings;
  media: MediaJoinSettings;
  sendQueue: { maxBatch: number; maxInFlight: number; minIntervalMs: number; maxWaiting: number };
}

export function messengerOptionsOf(s: MessengerSettings, t: MessengerTuning): MessengerOptions {
  return {
    phoneRegion: s.PHONE_DEFAULT_REGION,
    rateLimits: {
      contactSearches: s.MESSENGER_RATE_LIMIT_CONTACT_SEARCHES_PER_MINUTE,
      contactRequests: s.MESSENGER_RATE_LIMIT_CONTACT_REQUESTS_PER_MINUTE,
      callInvites: s.MESSENGER_RATE_LIMIT_CALL_INVITES_PER_MINUTE,
      chatChanges: s.MESSENGER_RATE_LIMIT_CHAT_CHANGES_PER_MINUTE,
      messageSends: s.MESSENGER_RATE_LIMIT_MESSAGE_SENDS_PER_MINUTE,
    },
    contactSearch: {
      url: s.ELASTICSEARCH_URL,
      index: s.MESSENGER_CONTACT_SEARCH_INDEX,
      requestTimeoutMs: t.contactSearchRequestTimeoutMs,
      rebuildCron: t.contactSearchRebuildCron,
    },
    contactIndexer: { intervalMs: t.contactSearchIndexIntervalMs, batchSize: INDEX_BATCH_SIZE, maxRunMs: INDEX_MAX_RUN_MS, retryMaxMs: t.contactSearchRetryCapMs },
    media: {
      tokenSecret: s.MESSENGER_MEDIA_TOKEN_SECRET,
      tokenTtlSeconds: MEDIA_TOKEN_TTL_SECONDS,
      turnUrls: s.MESSENGER_TURN_URLS.split(','),
      turnSecret: s.MESSENGER_TURN_SECRET,
      turnTtlSeconds: TURN_TTL_SECONDS,
    },
    sendQueue: { maxBatch: t.sendBatchMax, maxInFlight: t.sendConcurrency, minIntervalMs: t.sendMinIntervalMs, maxWaiting: t.sendQueueMaxWaiting },
  };
}

import type { MessengerTuning } from './defaults.ts';
import type { MessengerSettings } from './settings.ts';

/**
 * What the messenger's parts take, in their own words: the one place its settings (settings.ts:
 * bounds and units, validated once by loadConfig) and its fixed values (defaults.ts) become options. The parts
 * read these, never a setting's name. Every default it falls back to is MESSENGER_DEFAULTS' (defaults.ts).
 */
export interface MessengerOptions {
  /** A phone number without a country code is read in this region (E.164). */
  phoneRegion: string;
  /** Per-user requests per minute (0 = no limit). */
  rateLimits: { contactSearches: number; contactRequests: number; callInvites: number; chatChanges: number; messageSends: number };
  /** Elasticsearch when `url` is set, else the PostgreSQL adapter. */
  contactSearch: { url: string | undefined; index: string; requestTimeoutMs: number; rebuildCron: string };
  /** The contact-search indexer's poll and retry cap (its batch size and run limit are its own constants). */
  contactIndexer: { intervalMs: number; retryMaxMs: number };
  /** The media join's secrets and TURN servers (the token and TURN lifetimes are calls/media-join.ts's constants). */
  media: { tokenSecret: string; turnUrls: string[]; turnSecret: string };
  sendQueue: { maxBatch: number; maxInFlight: number; minIntervalMs: number; maxWaiting: number };
}

export function messengerOptionsOf(s: MessengerSettings, t: MessengerTuning): MessengerOptions {
  return {
    phoneRegion: s.PHONE_DEFAULT_REGION,
    rateLimits: {
      contactSearches: s.MESSENGER_RATE_LIMIT_CONTACT_SEARCHES_PER_MINUTE,
      contactRequests: t.rateLimitContactRequestsPerMinute,
      callInvites: t.rateLimitCallInvitesPerMinute,
      chatChanges: t.rateLimitChatChangesPerMinute,
      messageSends: s.MESSENGER_RATE_LIMIT_MESSAGE_SENDS_PER_MINUTE,
    },
    contactSearch: {
      url: s.ELASTICSEARCH_URL,
      index: s.MESSENGER_CONTACT_SEARCH_INDEX,
      requestTimeoutMs: t.contactSearchRequestTimeoutMs,
      rebuildCron: t.contactSearchRebuildCron,
    },
    contactIndexer: { intervalMs: t.contactSearchIndexIntervalMs, retryMaxMs: t.contactSearchRetryCapMs },
    media: {
      tokenSecret: s.MESSENGER_MEDIA_TOKEN_SECRET,
      turnUrls: s.MESSENGER_TURN_URLS.split(','),
      turnSecret: s.MESSENGER_TURN_SECRET,
    },
    sendQueue: { maxBatch: t.sendBatchMax, maxInFlight: t.sendConcurrency, minIntervalMs: t.sendMinIntervalMs, maxWaiting: t.sendQueueMaxWaiting },
  };
}

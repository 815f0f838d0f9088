import { Type } from '@sinclair/typebox';
import { phoneRegionSettings, type SettingsOf } from '../../platform/types/index.ts';
import { MESSENGER_DEFAULTS } from './defaults.ts';

/**
 * Settings of the messenger context's user replica and contact search (seed 002), spread into the
 * service's one settings schema by src/config.ts (as is messengerRealtimeSettings below). Imports
 * nothing from config.ts, so there is no cycle.
 */
export const messengerSettings = {
  ELASTICSEARCH_URL: Type.Optional(
    Type.String({
      pattern: '^https?://',
      examples: ['http://127.0.0.1:19200'], description: 'Elasticsearch (8.x) for the contact search index; unset = the PostgreSQL search adapter',
    }),
  ),
  MESSENGER_CONTACT_SEARCH_INDEX: Type.String({
    default: 'messenger-contacts',
    pattern: '^[a-z0-9][a-z0-9._-]{0,199}$',
    description: 'Elasticsearch index holding MessengerContactSearchDocument (created at start when missing)',
  }),
  ...phoneRegionSettings,
};

/**
 * Settings of the messenger's chats and calls (request limits, media and TURN), spread into the
 * service's one settings schema by src/config.ts. The RealtimeDispatchJob's (seed 000:
 * RealtimeDispatchOptions, still named MESSENGER_REALTIME_*) are the kernel's push part's:
 * src/platform/push/settings.ts.
 */
export const messengerRealtimeSettings = {
  // Per-user request limits (per minute, counted across replicas when REDIS_URL is set). The contact
  // searches bound phone-number enumeration and the sends a chat's load, so an operator sets them; the
  // other routes' limits are fixed values (defaults.ts: rateLimit…PerMinute), a test lowers them in code.
  MESSENGER_RATE_LIMIT_CONTACT_SEARCHES_PER_MINUTE: Type.Integer({
    default: MESSENGER_DEFAULTS.rateLimitContactSearchesPerMinute,
    minimum: 0,
    maximum: 100000,
    description: 'Contact searches by phone per user per minute: bounds phone-number enumeration (429 RATE_LIMITED past it; 0 = no limit)',
  }),
  MESSENGER_RATE_LIMIT_MESSAGE_SENDS_PER_MINUTE: Type.Integer({
    default: MESSENGER_DEFAULTS.rateLimitMessageSendsPerMinute,
    minimum: 0,
    maximum: 100000,
    description: 'Message sends per user per minute (429 RATE_LIMITED past it; 0 = no limit)',
  }),
  MESSENGER_MEDIA_TOKEN_SECRET: Type.String({
    default: 'dev-only-media-secret-change-me-0123456789',
    minLength: 32,
    description: 'HS256 key of the media room AccessToken minted at delivery (shared with the media server)',
  }),
  MESSENGER_TURN_URLS: Type.String({
    default: 'turn:127.0.0.1:3478?transport=udp,turn:127.0.0.1:3478?transport=tcp',
    pattern: '^(stuns?|turns?):[^,\\s]+(,(stuns?|turns?):[^,\\s]+)*$',
    description: 'Comma-separated TURN/STUN URLs handed to clients with their time-limited credentials',
  }),
  MESSENGER_TURN_SECRET: Type.String({
    default: 'dev-only-turn-secret-change-me-0123456789',
    minLength: 16,
    description: 'Shared secret of the TURN server (REST API credentials: HMAC-SHA1 over "<expiry>:<userId>")',
  }),
};

/** Every messenger setting (user replica, contact search, realtime), as the module receives them. */
export type MessengerSettings = SettingsOf<typeof messengerSettings & typeof messengerRealtimeSettings>;

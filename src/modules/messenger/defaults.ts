import { DAY_MS, HOUR_MS, MINUTE_MS, SECOND_MS } from '../../platform/time.ts';
import { defineDefaults } from '../../platform/types/index.ts';

/**
 * Every default of the messenger, in one place (River's way: beside the options, options.ts, and
 * checked once when the module is built). The first group are the defaults of its settings
 * (settings.ts shows them to operators); the rest are fixed values only a developer tunes, which a
 * test shortens by building the module in code, `messengerModule({ … })`. Product rules (a message's
 * length, a group's size, the ring timeout) are not defaults: they stay with the rules they belong to.
 */
export const MESSENGER_DEFAULTS = defineDefaults({
  // Per-user request limits per minute (0 = no limit): the MESSENGER_RATE_LIMIT_* settings' defaults…
  rateLimitContactSearchesPerMinute: 30,
  rateLimitMessageSendsPerMinute: 300,
  /**
   * …and the fixed ones (once settings too): contact requests; call and conference invites (each
   * route counted on its own); chat creations (a direct chat's opening included) and participant
   * additions (each route on its own). 429 RATE_LIMITED past them.
   */
  rateLimitContactRequestsPerMinute: 20,
  rateLimitCallInvitesPerMinute: 20,
  rateLimitChatChangesPerMinute: 30,

  /** Most concurrent sends written in one statement (1 = every send alone). */
  sendBatchMax: 64,
  /** Send statements running at once per replica; sends arriving meanwhile go together in the next. */
  sendConcurrency: 2,
  /**
   * Send statements start at most this often while sends keep coming, so a steady stream goes in
   * fewer, larger statements (each costs ~0.6 ms of PostgreSQL plus the driver's work here, whatever
   * its size); a send after a quiet spell goes at once.
   */
  sendMinIntervalMs: 10,
  /** Sends waiting for a statement slot per replica; past it 503 MSG_SEND_QUEUE_FULL with Retry-After. */
  sendQueueMaxWaiting: 5000,
  /** Tries of one send whose chat's membership kept changing under it (each on a fresh snapshot). */
  sendMaxTries: 5,
  /** Longest Elasticsearch request; a timeout counts as an indexing failure and is retried. */
  contactSearchRequestTimeoutMs: 5 * SECOND_MS,
  /** Contact search indexer timer (a committed replica change also wakes it through NOTIFY). */
  contactSearchIndexIntervalMs: 1 * SECOND_MS,
  /** A document whose indexing failed is retried after 1 s, doubling up to this. */
  contactSearchRetryCapMs: 1 * MINUTE_MS,
  /** Documents per bulk request of the indexer, and a run starts none after this (the next tick or wake goes on). */
  contactSearchIndexBatchSize: 500,
  contactSearchIndexMaxRunMs: 5 * SECOND_MS,
  /** MessengerContactSearchRebuildJob schedule (cron, UTC): nightly, reconciling the index with the replica. */
  contactSearchRebuildCron: '30 3 * * *',
  /** The nightly rebuild: replica rows per bulk request, and a run ends long before the next night's. */
  contactSearchRebuildBatchSize: 1000,
  contactSearchRebuildMaxRunMs: 6 * HOUR_MS,
  /** CallTimeoutReaper: a missed call is announced within ~2 s of its ring timeout. */
  callReaperIntervalMs: 2 * SECOND_MS,
  callReaperBatchSize: 100,
  callReaperMaxRunMs: 10 * SECOND_MS,
  /** The files sweep: uploads never sent are found within ~10 min of their expiry (FILES_UNSENT_EXPIRY). */
  /** The files' settings' defaults: the largest upload (FILES_MAX_BYTES, 100 MiB), and how long a file no message names is kept (FILES_UNSENT_EXPIRY). */
  fileMaxBytes: 100 * 1024 ** 2,
  fileUnsentExpiryMs: 24 * HOUR_MS,
  /** A presigned upload (PUT) URL's lifetime (once FILES_UPLOAD_URL_TTL); FILES_UNSENT_EXPIRY is at least this. */
  fileUploadUrlTtlMs: 15 * MINUTE_MS,
  /** Bytes read from an upload's start to tell its real type (file-type's own minimum for every type it knows). */
  fileSniffBytes: 4100,
  /** Quarantined files an admin page lists when the query names no limit. */
  fileQuarantinePageDefault: 100,
  /** A presigned download URL's lifetime (once FILES_DOWNLOAD_URL_TTL): a client asks again for a fresh one. */
  fileDownloadUrlTtlMs: 5 * MINUTE_MS,
  filesSweepIntervalMs: 10 * MINUTE_MS,
  /**
   * How long a file stays `Deleted` before the sweep deletes its bytes: a send that took the file
   * just before its last message was deleted writes its own message within a request's time, and
   * the sweep then finds it named again and keeps it (files/sweep.job.ts).
   */
  filesDeletedGraceMs: 5 * MINUTE_MS,
  filesSweepBatchSize: 100,
  filesSweepMaxRunMs: 1 * MINUTE_MS,
  /**
   * A reaction taken back keeps its row (messages/reactions.ts) for two readers only: a later PUT of
   * the same emoji revives it with its id (the RefId of its frames), and its reaction_changed frame
   * is built from it at delivery (realtime-dispatch/refs.ts). Nothing else reads taken-back rows
   * (history, search and the limit read live ones), so past a week — far beyond any frame's wait for
   * delivery short of an admin's requeue of a quarantined one — the row goes: a reaction given again
   * later is a new row with a new id, which no client can tell apart.
   */
  reactionTakenBackRetentionMs: 7 * DAY_MS,
  /** The reactions retention: hourly, in short DELETEs (rows taken back wait at most an hour past their week). */
  reactionsRetentionIntervalMs: 1 * HOUR_MS,
  reactionsRetentionBatchSize: 1000,
  reactionsRetentionMaxRunMs: 1 * MINUTE_MS,
  /**
   * Lifetimes of what is minted per recipient at delivery: the room token only has to outlive the
   * client's join (5 min); TURN credentials last the call (1 h, the TURN REST convention).
   */
  mediaTokenTtlSeconds: 300,
  turnTtlSeconds: 3600,
  /**
   * Typing calls of one connection for one chat closer together than this are answered as the
   * first was, from memory, before any query; and how many such entries are kept before stale ones
   * are swept (each is one connection and chat).
   */
  typingThrottleMs: 3 * SECOND_MS,
  typingThrottleEntriesMax: 50_000,
  /** pin.identity.users.v1 partitions the user replica consumer handles at once (each stays in order): the topic's partition count. */
  userSyncPartitionsConcurrently: 6,
  /** Records the user replica consumer applies per transaction. */
  userSyncMaxMessagesPerTransaction: 500,
  /** A resync writes this many users per transaction (row locks stay short)… */
  resyncApplyChunk: 100,
  /** …passes over records that arrived meanwhile at most this often (a user changed more often is left to the live consumer)… */
  resyncMaxLaterPasses: 5,
  /** …and logs its progress this often. */
  resyncProgressEveryMs: 5 * SECOND_MS,
  /** Page sizes when the query names none (the schemas document them). */
  chatPageDefault: 50,
  messagePageDefault: 100,
  searchPageDefault: 20,
  phoneConflictPageDefault: 100,
});

/** The messenger's fixed values a test may shorten (`messengerModule({ … })`). */
export type MessengerTuning = Pick<
  typeof MESSENGER_DEFAULTS,
  | 'sendBatchMax'
  | 'sendConcurrency'
  | 'sendMinIntervalMs'
  | 'sendQueueMaxWaiting'
  | 'contactSearchRequestTimeoutMs'
  | 'contactSearchIndexIntervalMs'
  | 'contactSearchRetryCapMs'
  | 'contactSearchRebuildCron'
  | 'rateLimitContactRequestsPerMinute'
  | 'rateLimitCallInvitesPerMinute'
  | 'rateLimitChatChangesPerMinute'
>;

/** The one check of the fixed values at construction (a test's overrides are held to it too). */
export function messengerTuningProblems(t: MessengerTuning): string[] {
  const positive = ['sendBatchMax', 'sendConcurrency', 'sendQueueMaxWaiting', 'contactSearchRequestTimeoutMs', 'contactSearchIndexIntervalMs', 'contactSearchRetryCapMs'] as const;
  const problems = positive.filter((k) => !(Number.isInteger(t[k]) && t[k] > 0)).map((k) => `messenger ${k}: must be a whole number > 0 (got ${t[k]})`);
  // 0 = no wait between send statements, and no limit for a route (as the limits' settings allow).
  const zeroAllowed = ['sendMinIntervalMs', 'rateLimitContactRequestsPerMinute', 'rateLimitCallInvitesPerMinute', 'rateLimitChatChangesPerMinute'] as const;
  for (const k of zeroAllowed) if (!(Number.isInteger(t[k]) && t[k] >= 0)) problems.push(`messenger ${k}: must be a whole number ≥ 0 (got ${t[k]})`);
  return problems;
}

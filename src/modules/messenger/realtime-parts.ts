import type { ModuleDeps, ModuleParts } from '../../platform/module.ts';
import type { Principal } from '../../platform/http/auth.ts';
import { createMediaJoinMinter, type MediaJoinMinter } from './calls/media-join.ts';
import { callTimeoutReaperJob } from './calls/call-timeout-reaper.job.ts';
import { activeChatIdsOf } from './chats/chat-sql.ts';
import type { ContactStatusLookup } from './contact-search/search.ts';
import { contactStatusLookup } from './contacts/contacts.ts';
import { chatGroup } from './realtime-dispatch/kinds.ts';
import { createRealtimeDispatcher, type RealtimeDispatcher } from './realtime-dispatch/dispatcher.ts';
import { createRealtimeMetrics, type RealtimeMetrics } from './realtime-dispatch/metrics.ts';
import { dispatchSettingsProblems, type DispatchSettings } from './realtime-dispatch/rules.ts';
import { realtimeDispatchJob, realtimeRetentionJob } from './realtime-dispatch/dispatch.job.ts';
import { registerRealtimeRoutes } from './routes.realtime.ts';
import { createSendQueue } from './messages/send.ts';
import type { RealtimeContext } from './context.ts';

export function dispatchSettingsOf(config: ModuleDeps['config']): DispatchSettings {
  return {
    batchSize: config.MESSENGER_REALTIME_BATCH_SIZE,
    maxRunDurationMs: config.MESSENGER_REALTIME_MAX_RUN_DURATION_MS,
    maxAttempts: config.MESSENGER_REALTIME_MAX_ATTEMPTS,
    idleWaitMs: Math.min(config.MESSENGER_REALTIME_IDLE_WAIT_MS, config.MESSENGER_REALTIME_MAX_RUN_DURATION_MS),
    backoff: {
      baseMs: config.MESSENGER_REALTIME_BACKOFF_BASE_MS,
      factor: config.MESSENGER_REALTIME_BACKOFF_FACTOR,
      capMs: config.MESSENGER_REALTIME_BACKOFF_CAP_MS,
      jitter: config.MESSENGER_REALTIME_BACKOFF_JITTER,
    },
  };
}

export function mediaJoinMinterOf(deps: Pick<ModuleDeps, 'config' | 'clock'>): MediaJoinMinter {
  const c = deps.config;
  return createMediaJoinMinter(
    {
      tokenSecret: c.MESSENGER_REALTIME_MEDIA_TOKEN_SECRET,
      tokenTtlSeconds: c.MESSENGER_REALTIME_MEDIA_TOKEN_TTL_SECONDS,
      turnUrls: c.MESSENGER_REALTIME_TURN_URLS.split(','),
      turnSecret: c.MESSENGER_REALTIME_TURN_SECRET,
      turnTtlSeconds: c.MESSENGER_REALTIME_TURN_TTL_SECONDS,
    },
    deps.clock,
  );
}

export interface RealtimeParts extends Required<Pick<ModuleParts, 'routes' | 'jobs' | 'hubGroups'>> {
  dispatcher: RealtimeDispatcher;
  metrics: RealtimeMetrics;
  /** INV-MU-3: contact search unmasks the last name of Accepted contacts. */
  contactStatus: ContactStatusLookup;
}

/**
 * The messenger's chats, messages, contacts, calls and conferences, and the RealtimeDispatchJob that
 * pushes their committed changes to /hubs/messenger (seed 000). index.ts merges these parts.
 */
export function realtimeParts(deps: ModuleDeps): RealtimeParts {
  const settings = dispatchSettingsOf(deps.config);
  const problems = dispatchSettingsProblems(settings);
  if (problems.length > 0) throw new Error(`invalid messenger realtime settings: ${problems.join('; ')}`);
  const log = deps.log.child({ module: 'messenger', part: 'realtime' });
  const metrics = createRealtimeMetrics(deps.registry, deps.pool);
  const mintJoin = mediaJoinMinterOf(deps);
  const dispatcher = createRealtimeDispatcher({ pool: deps.pool, hub: deps.hub, metrics, log, mintJoin, settings });
  // Sends committed here wake this replica's dispatcher at once; NOTIFY still wakes the others.
  let wakeDispatcher = () => {};
  const sends = createSendQueue(
    { pool: deps.pool, clock: deps.clock, log, onCommitted: () => wakeDispatcher() },
    { maxBatch: deps.config.MESSENGER_REALTIME_SEND_BATCH_MAX, maxInFlight: deps.config.MESSENGER_REALTIME_SEND_CONCURRENCY },
  );
  const ctx: RealtimeContext = { ...deps, log, metrics, mintJoin, sends };

  return {
    dispatcher,
    metrics,
    contactStatus: contactStatusLookup(deps.db),
    routes: (app) => registerRealtimeRoutes(app, ctx),
    jobs: [
      realtimeDispatchJob(dispatcher, {
        pollingIntervalMs: deps.config.MESSENGER_REALTIME_POLLING_INTERVAL_MS,
        connectWake: (wake) => {
          wakeDispatcher = wake;
        },
      }),
      realtimeRetentionJob(deps.pool, { retentionHours: deps.config.MESSENGER_REALTIME_RETENTION_DONE_HOURS, metrics }),
      callTimeoutReaperJob(deps.db, { intervalMs: deps.config.MESSENGER_REALTIME_CALL_REAPER_INTERVAL_MS }),
    ],
    // Record-level: a connection joins chat:{ChatId} only for chats its user is an Active participant of.
    hubGroups: async (principal: Principal) => (await activeChatIdsOf(deps.pool, principal.userId)).map(chatGroup),
  };
}

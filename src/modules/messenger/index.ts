import { messengerRealtimeSettings, messengerSettings, type MessengerSettings } from './settings.ts';
import { MESSENGER_DEFAULTS, messengerTuningProblems, type MessengerTuning } from './defaults.ts';
import { filesOptionsOf, messengerFilesSettings, type MessengerFilesSettings } from './files/settings.ts';
import { createFileStore } from './files/store.ts';
import { filesSweepJob } from './files/sweep.job.ts';
import { reactionsRetentionJob } from './messages/reactions-retention.job.ts';
import { fileForMessage } from './files/files.ts';
import type { Principal } from '../../platform/http/index.ts';
import { defineModule, type ModuleDeps, type ModuleParts } from '../../platform/module.ts';
import { callTimeoutReaperJob } from './calls/call-timeout-reaper.job.ts';
import { removeFromMediaSessions } from './calls/deactivation.ts';
import { createMediaJoinMinter } from './calls/media-join.ts';
import { messengerOptionsOf } from './options.ts';
import { chatGroup, chatIdOfGroup } from './model/chat-kinds.ts';
import { typingMethod } from './presence/typing.ts';
import { announcePresence } from './presence/presence.ts';
import { chatMembership, connectStateOf } from './chats/chat-sql.ts';
import { createElasticsearchContactSearch } from './contact-search/elasticsearch-adapter.ts';
import { contactSearchIndexerJob } from './contact-search/indexer.job.ts';
import { createContactSearchMetrics } from './contact-search/metrics.ts';
import { createPostgresContactSearch } from './contact-search/postgres-adapter.ts';
import { contactSearchRebuildJob } from './contact-search/rebuild.job.ts';
import { contactRelationLookup } from './contacts/contacts.ts';
import { createSendQueue } from './messages/send.ts';
import { ChatErrors } from './errors.ts';
import { messengerPushKinds } from './realtime-dispatch/register.ts';
import { registerMessengerRoutes, type MessengerPartsContext } from './routes.ts';
import { USER_INACTIVE_CLOSE_REASON } from './errors.ts';
import { displayNamesOf, inactiveAmong } from './user-replica/replica-reads.ts';
import { HubRefusal, tickBatcher } from '../../platform/realtime/index.ts';
import { createUserSyncMetrics } from './user-replica/metrics.ts';
import { USER_SYNC_CONSUMER, userSyncConsumer } from './user-replica/user-sync.consumer.ts';

export { MESSENGER_DEFAULTS, type MessengerTuning } from './defaults.ts';

/**
 * The messenger context:
 * - chats, messages, contacts and the blacklist, 1:1 calls and conferences, each change announced
 *   to /hubs/messenger by the RealtimeDispatchJob through push.realtime_outbox (seed 000), and
 *   every sent message to notifications as MessagePostedKafkaEvent;
 * - the user replica fed by pin.identity.users.v1 (MessengerUserUpsertedConsumer, seed 002) with its
 *   phone-conflict review, and contact search by phone through a search index (Elasticsearch when
 *   ELASTICSEARCH_URL is set, else PostgreSQL) kept by an indexer and MessengerContactSearchRebuildJob.
 */
export function messengerModule(overrides: Partial<MessengerTuning> = {}) {
  const tuning: MessengerTuning = { ...MESSENGER_DEFAULTS, ...overrides };
  // The one check at construction: a test's overrides are held to what the service runs with.
  const problems = messengerTuningProblems(tuning);
  if (problems.length > 0) throw new Error(`invalid messenger options: ${problems.join('; ')}`);
  return defineModule({ ...messengerSettings, ...messengerRealtimeSettings, ...messengerFilesSettings }, (deps) => messengerParts(deps, tuning));
}

export default messengerModule();

function messengerParts(deps: ModuleDeps<MessengerSettings & MessengerFilesSettings>, tuning: MessengerTuning): ModuleParts {
  const { settings, ...kernel } = deps;
  const options = messengerOptionsOf(settings, tuning);
  const log = deps.log.child({ module: 'messenger' });

  const search = options.contactSearch;
  const index = search.url
    ? createElasticsearchContactSearch({ url: search.url, index: search.index, requestTimeoutMs: search.requestTimeoutMs })
    : createPostgresContactSearch(deps.db, deps.clock);
  log.info({ adapter: index.kind }, 'contact search adapter selected');
  const searchMetrics = createContactSearchMetrics(deps.registry, deps.db);

  const realtimeLog = log.child({ part: 'realtime' });
  const mintJoin = createMediaJoinMinter({ ...options.media, tokenTtlSeconds: MESSENGER_DEFAULTS.mediaTokenTtlSeconds, turnTtlSeconds: MESSENGER_DEFAULTS.turnTtlSeconds }, deps.clock);
  // Its kinds on the kernel's push path: loaded and built here, dispatched there.
  deps.push.registerKinds(messengerPushKinds(mintJoin));
  const sends = createSendQueue(
    // Sends committed here wake this replica's dispatcher at once; their NOTIFY wakes only the others.
    { db: deps.db, clock: deps.clock, push: deps.push, log: realtimeLog, onCommitted: () => deps.push.wake(), wakePayload: () => deps.push.wakePayload() },
    { ...options.sendQueue, whenFull: ChatErrors.sendQueueFull },
  );
  const userSync = {
    clock: deps.clock,
    log: log.child({ consumer: USER_SYNC_CONSUMER }),
    metrics: createUserSyncMetrics(deps.registry, USER_SYNC_CONSUMER),
    phoneRegion: options.phoneRegion,
    partitionsConcurrently: MESSENGER_DEFAULTS.userSyncPartitionsConcurrently,
    leaveMediaSessions: removeFromMediaSessions,
    push: deps.push,
  };
  deps.hub.onPresenceChange(announcePresence(deps.db, deps.hub, realtimeLog));
  // The connects of one event-loop turn read their users' state in one query (a reconnect storm).
  const connectState = tickBatcher((userIds: string[]) => connectStateOf(deps.db, userIds), { missing: { active: undefined, chatIds: [] } });
  // The files' bytes: in the object store when FILES_S3_BUCKET is set, else the file routes answer 503 FILES_NOT_CONFIGURED.
  const filesOptions = filesOptionsOf(settings);
  const store = filesOptions.store ? createFileStore(filesOptions.store) : undefined;
  log.info({ configured: store !== undefined }, store ? 'file storage configured' : 'file storage not configured (FILES_S3_BUCKET unset): file routes answer 503 FILES_NOT_CONFIGURED');
  const files = { db: deps.db, clock: deps.clock, log: log.child({ part: 'files' }), store, options: filesOptions };
  const ctx: MessengerPartsContext = {
    ...kernel, options, log: realtimeLog, mintJoin, sends, userSync, files,
    fileForMessage: (caller, chatId, fileId) => fileForMessage(files, caller, chatId, fileId),
  };

  return {
    name: 'messenger',
    routes: (app) => {
      app.addHook('onClose', () => index.close());
      app.addHook('onClose', async () => store?.close());
      registerMessengerRoutes(app, ctx, {
        index,
        phoneRegion: options.phoneRegion,
        // Contact search shows the last name of a user only to their Accepted contacts.
        contactRelation: contactRelationLookup(deps.db),
      });
    },
    // Record-level: a connection joins chat:{ChatId} only for chats its user is an Active participant of.
    // A user whose replica row is inactive (blocked, archived) is refused; one the replica has not
    // seen yet joins only user:{UserId} (it is in no chat), so notifications still reach it.
    hubGroups: async (principal: Principal) => {
      const { active, chatIds } = await connectState(principal.userId);
      if (active === false) throw new HubRefusal(USER_INACTIVE_CLOSE_REASON);
      return chatIds.map(chatGroup);
    },
    // Typing(chatId): live only, to the chat's other members (presence/typing.ts).
    hubMethods: { Typing: typingMethod(deps.db, deps.hub) },
    hubAccess: { reason: USER_INACTIVE_CLOSE_REASON, code: 'MSG_USER_INACTIVE', revoked: (userIds) => inactiveAmong(deps.db, userIds) },
    // Record-level at delivery: each replica checks a chat send's membership version against these.
    hubGroupMembers: async (group: string) => {
      const chatId = chatIdOfGroup(group);
      return chatId === undefined ? undefined : chatMembership(deps.db, chatId);
    },
    // Contact search degrades on its own (503 from the search endpoint): reported, not required.
    healthChecks: [{ name: 'search', required: false, check: () => index.health() }],
    // The ops console's audit names its actors from the replica of identity's users.
    opsActorNames: (ids) => displayNamesOf(deps.db, ids),
    jobs: [
      contactSearchIndexerJob({
        db: deps.db,
        index,
        metrics: searchMetrics,
        settings: { ...options.contactIndexer, batchSize: MESSENGER_DEFAULTS.contactSearchIndexBatchSize, maxRunMs: MESSENGER_DEFAULTS.contactSearchIndexMaxRunMs },
      }),
      contactSearchRebuildJob({
        db: deps.db,
        index,
        metrics: searchMetrics,
        batchSize: MESSENGER_DEFAULTS.contactSearchRebuildBatchSize,
        cron: search.rebuildCron,
        maxRunMs: MESSENGER_DEFAULTS.contactSearchRebuildMaxRunMs,
      }),
      callTimeoutReaperJob(deps.db, deps.push, {
        intervalMs: MESSENGER_DEFAULTS.callReaperIntervalMs,
        batchSize: MESSENGER_DEFAULTS.callReaperBatchSize,
        maxRunMs: MESSENGER_DEFAULTS.callReaperMaxRunMs,
      }),
      reactionsRetentionJob(deps.db, {
        retentionMs: MESSENGER_DEFAULTS.reactionTakenBackRetentionMs,
        intervalMs: MESSENGER_DEFAULTS.reactionsRetentionIntervalMs,
        batchSize: MESSENGER_DEFAULTS.reactionsRetentionBatchSize,
        maxRunMs: MESSENGER_DEFAULTS.reactionsRetentionMaxRunMs,
      }),
      ...(store
        ? [filesSweepJob(deps.db, store, {
            intervalMs: MESSENGER_DEFAULTS.filesSweepIntervalMs,
            batchSize: MESSENGER_DEFAULTS.filesSweepBatchSize,
            maxRunMs: MESSENGER_DEFAULTS.filesSweepMaxRunMs,
            unsentExpiryMs: filesOptions.unsentExpiryMs,
            deletedGraceMs: MESSENGER_DEFAULTS.filesDeletedGraceMs,
          })]
        : []),
    ],
    consumers: [
      userSyncConsumer(userSync),
    ],
  };
}

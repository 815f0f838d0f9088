import { defineModule } from '../../platform/module.ts';
import { createElasticsearchContactSearch } from './contact-search/elasticsearch-adapter.ts';
import { contactSearchIndexerJob } from './contact-search/indexer.job.ts';
import { createContactSearchMetrics } from './contact-search/metrics.ts';
import { createPostgresContactSearch } from './contact-search/postgres-adapter.ts';
import { contactSearchRebuildJob } from './contact-search/rebuild.job.ts';
import { realtimeParts } from './realtime-parts.ts';
import { registerUserReplicaRoutes } from './routes.ts';
import { createUserSyncMetrics } from './user-replica/metrics.ts';
import { USER_SYNC_CONSUMER, userSyncConsumer } from './user-replica/user-sync.consumer.ts';

/**
 * The messenger context. So far: the user replica fed by pin.identity.users.v1
 * (MessengerUserUpsertedConsumer, seed 002), its phone-conflict review, and contact search by
 * phone through a search index (Elasticsearch when ELASTICSEARCH_URL is set, else PostgreSQL)
 * kept by an indexer and MessengerContactSearchRebuildJob.
 */
export default defineModule((deps) => {
  const { config } = deps;
  const log = deps.log.child({ module: 'messenger' });
  const index = config.ELASTICSEARCH_URL
    ? createElasticsearchContactSearch({
        url: config.ELASTICSEARCH_URL,
        index: config.MESSENGER_CONTACT_SEARCH_INDEX,
        requestTimeoutMs: config.MESSENGER_CONTACT_SEARCH_REQUEST_TIMEOUT_MS,
      })
    : createPostgresContactSearch(deps.pool, deps.clock);
  log.info({ adapter: index.kind }, 'contact search adapter selected');
  const searchMetrics = createContactSearchMetrics(deps.registry, deps.pool);
  // Chats, messages, contacts, calls and the RealtimeDispatchJob (seed 000).
  const realtime = realtimeParts(deps);

  return {
    name: 'messenger',
    routes: (app) => {
      app.addHook('onClose', () => index.close());
      registerUserReplicaRoutes(app, {
        pool: deps.pool,
        // The contacts part of the messenger plugs its Accepted lookup in here (INV-MU-3).
        search: { index, phoneRegion: config.MESSENGER_PHONE_DEFAULT_REGION, contactStatus: realtime.contactStatus },
      });
      realtime.routes(app);
    },
    hubGroups: realtime.hubGroups,
    // Contact search degrades on its own (503 from the search endpoint): reported, not required.
    healthChecks: [{ name: 'search', required: false, check: () => index.health() }],
    jobs: [
      contactSearchIndexerJob({
        pool: deps.pool,
        index,
        metrics: searchMetrics,
        settings: {
          intervalMs: config.MESSENGER_CONTACT_SEARCH_INDEX_INTERVAL_MS,
          batchSize: config.MESSENGER_CONTACT_SEARCH_INDEX_BATCH_SIZE,
          retryMaxMs: config.MESSENGER_CONTACT_SEARCH_RETRY_MAX_MS,
        },
      }),
      contactSearchRebuildJob({
        pool: deps.pool,
        index,
        metrics: searchMetrics,
        batchSize: config.MESSENGER_CONTACT_SEARCH_REBUILD_BATCH_SIZE,
        cron: config.MESSENGER_CONTACT_SEARCH_REBUILD_CRON,
      }),
      ...realtime.jobs,
    ],
    consumers: [
      userSyncConsumer({
        clock: deps.clock,
        log: log.child({ consumer: USER_SYNC_CONSUMER }),
        metrics: createUserSyncMetrics(deps.registry, USER_SYNC_CONSUMER),
        phoneRegion: config.MESSENGER_PHONE_DEFAULT_REGION,
        partitionsConcurrently: config.MESSENGER_USER_SYNC_PARTITIONS_CONCURRENTLY,
      }),
    ],
  };
});

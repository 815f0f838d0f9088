import type { Db } from '../../platform/db/index.ts';
import { counter, dbGauge, histogram, type Registry } from '../../platform/observability/index.ts';
import type { Clock } from '../../platform/time.ts';
import type { ProviderRegistry } from './providers/registry.ts';
import { backlogByChannel, countUnsentByStatus, type ChannelBacklog } from './sql.ts';

export type SendSource = 'dispatcher' | 'retry';

/**
 * What on-call needs (this module's README.md lists the alerts):
 * - `retry_sent_total` (seed name): retries that ended Sent;
 * - `notifications_terminal_failures_total`: terminal Failed (attempts used up, A1, or a
 *   non-retriable error, A2) → alert on any increase;
 * - `notifications_failed_backlog` / `notifications_failed_oldest_due_age_seconds`: the retry backlog
 *   and how late its oldest due row is → alert when it grows or the worker stalls;
 * - `notifications_waiting` / `notifications_skipped_total`: rows held back by a disabled channel or a
 *   missing adapter (A3);
 * - `notifications_waiting_oldest_age_seconds`: how long the oldest of them has waited → alert when
 *   a channel stays off for long;
 * - `notifications_message_recipients_folded_total`: message recipients whose chat already notified
 *   them (the collapse window, a message request's one notification);
 * - `notifications_unsent`: Pending, Failed (retrying) and terminal Failed rows, the ops console's
 *   backlog of the module;
 * - `notifications_unconfirmed` / `notifications_outcome_unknown_total`: emails whose send may have
 *   gone out unrecorded (delivery/intent.ts), never resent → alert until a webhook or an admin resolves them;
 * - (NotificationStatusChanged frames wait in the messenger's realtime outbox: its
 *   `messenger_realtime_oldest_pending_age_seconds` shows them late);
 * - attempts by outcome, provider latency, webhooks, version races, published outcome events.
 * The gauges are read from the database at scrape time, so every replica reports the same truth.
 */
export function createNotificationMetrics(registry: Registry, deps: { db: Db; providers: ProviderRegistry; clock: Clock }) {
  // One grouped query feeds all three gauges: a scrape collects every metric in parallel, so the
  // gauges share the query in flight. Database down: the query rejects and dbGauge keeps the last
  // values; /health/ready reports the database.
  let refreshing: Promise<Array<ChannelBacklog & { reason: string | null }>> | null = null;
  const rows = () =>
    (refreshing ??= backlogByChannel(deps.db, deps.clock.now())
      .then((found) =>
        found.map((r) => {
          const state = deps.providers.state(r.providerKey);
          return { ...r, reason: !r.isEnabled ? 'channel_disabled' : state === 'available' ? null : `provider_${state}` };
        }),
      )
      .finally(() => (refreshing = null)));
  dbGauge(registry, {
    name: 'notifications_failed_backlog',
    help: 'Non-terminal Failed notifications waiting for a retry, by channel (unconfirmed sends, which are never retried, excluded)',
    labelNames: ['channel'] as const,
    read: async () => (await rows()).map((r) => ({ labels: { channel: r.channel }, value: r.failedBacklog })),
  });
  dbGauge(registry, {
    name: 'notifications_failed_oldest_due_age_seconds',
    help: 'How long the oldest due, retryable, unleased Failed notification of a sending channel has been due (0 = none); grows when the retry worker stalls',
    labelNames: ['channel'] as const,
    read: async () =>
      (await rows()).map((r) => ({ labels: { channel: r.channel }, value: r.reason ? 0 : Math.max(0, r.oldestDueAgeSeconds) })),
  });
  dbGauge(registry, {
    name: 'notifications_waiting',
    help: 'Pending or Failed notifications held back: channel_disabled, provider_not_implemented, provider_not_configured (A3)',
    labelNames: ['channel', 'reason'] as const,
    read: async () =>
      (await rows()).flatMap((r) => (r.reason ? [{ labels: { channel: r.channel, reason: r.reason }, value: r.held }] : [])),
  });
  dbGauge(registry, {
    name: 'notifications_waiting_oldest_age_seconds',
    help: 'How long the oldest held-back notification (channel disabled or its provider missing) has existed (0 = none)',
    labelNames: ['channel', 'reason'] as const,
    read: async () =>
      (await rows()).flatMap((r) => (r.reason ? [{ labels: { channel: r.channel, reason: r.reason }, value: Math.max(0, r.oldestHeldAgeSeconds) }] : [])),
  });
  dbGauge(registry, {
    name: 'notifications_unconfirmed',
    help: 'Notifications whose send may have reached the provider unrecorded (email over SMTP): never resent, they wait for a delivery webhook or the admin resolve call',
    labelNames: ['channel'] as const,
    read: async () => (await rows()).map((r) => ({ labels: { channel: r.channel }, value: r.unconfirmed })),
  });
  dbGauge(registry, {
    name: 'notifications_unsent',
    help: 'Notifications not Sent, by status: Pending, Failed waiting for a retry (terminal="false"), terminal Failed (terminal="true")',
    labelNames: ['status', 'terminal'] as const,
    read: async () => {
      const c = await countUnsentByStatus(deps.db);
      return [
        { labels: { status: 'Pending', terminal: 'false' }, value: c.pending },
        { labels: { status: 'Failed', terminal: 'false' }, value: c.failed },
        { labels: { status: 'Failed', terminal: 'true' }, value: c.terminal },
      ];
    },
  });

  return {
    retrySent: counter(registry, {
      name: 'retry_sent_total',
      help: 'Failed notifications the retry worker delivered (Failed → Sent)',
      labelNames: ['channel'] as const,
    }),
    attempts: counter(registry, {
      name: 'notifications_send_attempts_total',
      help: 'Provider sends by source and outcome (sent, retry, terminal, skipped, discarded)',
      labelNames: ['channel', 'source', 'outcome'] as const,
    }),
    terminalFailures: counter(registry, {
      name: 'notifications_terminal_failures_total',
      help: 'Notifications that became terminal Failed (alert): max_attempts, non_retriable, delivery_failed',
      labelNames: ['channel', 'reason', 'code'] as const,
    }),
    presenceUnknown: counter(registry, {
      name: 'notifications_presence_lookup_failures_total',
      help: 'MessagePosted recipients whose hub presence could not be read (Redis down); treated as offline and notified',
    }),
    folded: counter(registry, {
      name: 'notifications_message_recipients_folded_total',
      help: 'MessagePosted recipients given no notification: the chat notified them within NOTIFICATIONS_CHAT_COLLAPSE_WINDOW (unread), or already once while it is a message request to them',
    }),
    skipped: counter(registry, {
      name: 'notifications_skipped_total',
      help: 'Notifications held back instead of sent: channel_disabled, provider_not_implemented, provider_not_configured',
      labelNames: ['channel', 'reason'] as const,
    }),
    sendDuration: histogram(registry, {
      name: 'notifications_provider_send_duration_seconds',
      help: 'Provider call latency',
      labelNames: ['provider'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    }),
    versionConflicts: counter(registry, {
      name: 'notifications_version_conflicts_total',
      help: 'Optimistic-version races lost, by writer and what the loser did (reapplied, discarded, rejected)',
      labelNames: ['writer', 'resolution'] as const,
    }),
    webhooks: counter(registry, {
      name: 'notifications_webhooks_total',
      help: 'Delivery webhooks by provider and result',
      labelNames: ['provider', 'result'] as const,
    }),
    dispatchedEvents: counter(registry, {
      name: 'notifications_dispatched_events_total',
      help: 'NotificationDispatchedEvent written to the outbox, by Status',
      labelNames: ['status'] as const,
    }),
    outcomeUnknown: counter(registry, {
      name: 'notifications_outcome_unknown_total',
      help: 'Sends whose outcome the provider never told (SMTP: the reply to the end of DATA lost or late): the row is left unconfirmed, never resent',
      labelNames: ['channel'] as const,
    }),
    pushTokensDeleted: counter(registry, {
      name: 'notifications_push_tokens_deleted_total',
      help: 'Push tokens deleted after the push service called them invalid',
    }),
  };
}

export type NotificationMetrics = ReturnType<typeof createNotificationMetrics>;

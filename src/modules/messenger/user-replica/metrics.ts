import { Counter, Gauge, counter, histogram, type Registry } from '../../../platform/observability/index.ts';

/**
 * Metrics of seed 002, names exactly as the seed spells them. Alerts: lag > 5 min
 * (messenger_user_sync_lag_seconds > 300), DLQ > 0 (increase(messenger_user_sync_dlq_total) > 0),
 * phone-conflict spike (rate(messenger_user_phone_conflicts_total)).
 *
 * The DLQ and contract-mismatch counters mirror the consumer runner's own counters for this
 * consumer at scrape time: the runner is what dead-letters (including messages it cannot even
 * read) and what checks the contract version, and it counts only after the fact, so mirroring is
 * exact where counting in the handler would miss the unreadable ones and count rolled-back attempts.
 */
export function createUserSyncMetrics(registry: Registry, consumerName: string) {
  /** Values of a runner metric for this consumer, summed by one label (or in all). */
  const platformSum = async (name: string, label?: string): Promise<Map<string, number>> => {
    const byLabel = new Map<string, number>();
    const metric = registry.getSingleMetric(name);
    if (!metric) return byLabel;
    for (const { value, labels } of (await metric.get()).values) {
      if (labels.consumer !== consumerName) continue;
      const key = label ? String(labels[label] ?? '') : '';
      byLabel.set(key, (byLabel.get(key) ?? 0) + value);
    }
    return byLabel;
  };

  /** Wall-clock of the last handled event and its age then; drives the lag gauge. */
  const lag = { handledAtMs: 0, ageMs: 0 };

  const mirrored = <T extends string>(name: string, help: string, labelNames: readonly T[], source: string, label?: string) =>
    (registry.getSingleMetric(name) as Counter<T> | undefined) ??
    new Counter<T>({
      name,
      help,
      labelNames,
      registers: [registry],
      async collect(this: Counter<T>) {
        const sums = await platformSum(source, label);
        this.reset();
        for (const [key, value] of sums) {
          if (value > 0) (label ? this.inc({ [label]: key } as Partial<Record<T, string>>, value) : this.inc(value));
        }
      },
    });

  return {
    consumeDuration: histogram(registry, {
      name: 'messenger_user_sync_consume_duration_ms',
      help: 'Time to apply one UserUpserted event to the replica (validation, reads, write), milliseconds; a batch shares its time among its events',
      buckets: [0.5, 1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 5000],
    }),
    upserted: counter(registry, {
      name: 'messenger_users_upserted_total',
      help: 'Replica rows created or updated from UserUpserted events, by operation (created, updated)',
      labelNames: ['operation'] as const,
    }),
    stale: counter(registry, {
      name: 'messenger_identity_stale_events_total',
      help: 'UserUpserted events skipped because the replica already has that Version or a newer one (INV-MU-1)',
    }),
    phoneConflicts: counter(registry, {
      name: 'messenger_user_phone_conflicts_total',
      help: 'Snapshots whose phone another live replica row holds (MSG_USER_PHONE_CONFLICT, INV-MU-2); alert on a spike',
    }),
    phonesHandedOver: counter(registry, {
      name: 'messenger_user_phone_conflicts_resolved_total',
      help: 'Open phone conflicts closed by the holder releasing the phone (the phone was applied)',
    }),
    dlq: mirrored(
      'messenger_user_sync_dlq_total',
      'pin.identity.users.v1 messages sent to the dead-letter topic by the user replica consumer, by code; alert when > 0',
      ['code'] as const,
      'consumer_dlq_total',
      'code',
    ),
    contractMismatch: mirrored(
      'messenger_user_sync_contract_mismatch_total',
      'UserUpserted events with a ContractVersion other than 1, processed anyway (warn-and-proceed)',
      [] as const,
      'consumer_contract_version_mismatch_total',
    ),
    lagSeconds:
      (registry.getSingleMetric('messenger_user_sync_lag_seconds') as Gauge | undefined) ??
      new Gauge({
        name: 'messenger_user_sync_lag_seconds',
        help: 'Age of the newest applied UserUpserted event while a backlog remains, growing while the consumer is stuck; 0 when caught up. Alert > 300',
        registers: [registry],
        async collect(this: Gauge) {
          // The runner's offset lag (consumer_lag, per partition) says whether anything waits.
          const behind = ((await platformSum('consumer_lag')).get('') ?? 0) > 0;
          // Caught up: nothing is late. Behind: the head is at least as old as the last applied
          // event was, plus the time since (grows while a partition is stuck in backoff).
          this.set(behind && lag.handledAtMs > 0 ? (lag.ageMs + (Date.now() - lag.handledAtMs)) / 1000 : 0);
        },
      }),
    /** Called per applied event with its occurred-at. */
    observeEvent(occurredAt: string): void {
      const nowMs = Date.now();
      lag.handledAtMs = nowMs;
      lag.ageMs = Math.max(0, nowMs - Date.parse(occurredAt));
    },
  };
}

export type UserSyncMetrics = ReturnType<typeof createUserSyncMetrics>;

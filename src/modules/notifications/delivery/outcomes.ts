import type { Db, Queryable } from '../../../platform/db/index.ts';
import type { Logger } from '../../../platform/observability/logger.ts';
import type { NotificationMetrics, SendSource } from '../metrics.ts';
import { NTF, type Channel } from '../model.ts';
import type { Delivery } from '../providers/port.ts';
import type { ProviderRegistry } from '../providers/registry.ts';
import { endsCycle, idempotencyKeyOf, type AttemptDecision } from './rules.ts';
import type { ClaimedRow, OutcomeWrite } from './sql.ts';

/** Shared by the batch recorder (delivery.ts) and the race re-applier (reapply.ts). */

export interface DeliveryDeps {
  db: Db;
  pool: Queryable;
  providers: ProviderRegistry;
  metrics: NotificationMetrics;
  log: Logger;
  concurrency: number;
  /** Safety net above the adapters' own timeouts: a hung adapter never holds a batch forever. */
  hardTimeoutMs: number;
}

export const deliveryOf = (row: ClaimedRow): Delivery => ({
  notificationId: row.id,
  deliveryCycle: row.deliveryCycle,
  idempotencyKey: idempotencyKeyOf(row.id, row.deliveryCycle),
  channel: row.channel,
  recipientUserId: row.recipientUserId,
  recipientAddress: row.recipientAddress,
  title: row.title,
  body: row.body,
  data: row.data,
  createdAt: new Date(row.createdAt),
});

export function writeOf(row: Pick<ClaimedRow, 'id'>, version: number, d: Extract<AttemptDecision, { kind: 'sent' | 'retry' | 'terminal' }>): OutcomeWrite {
  return {
    id: row.id,
    version,
    status: d.kind === 'sent' ? 'Sent' : 'Failed',
    attempts: d.attempts,
    terminal: d.kind === 'terminal',
    lastError: d.kind === 'sent' ? null : d.code,
    nextAttemptAt: d.kind === 'retry' ? d.nextAttemptAt.toISOString() : null,
    providerMessageId: d.kind === 'sent' ? d.providerMessageId : null,
  };
}

export function cycleOutcomeOf(row: Pick<ClaimedRow, 'id' | 'channel' | 'deliveryCycle' | 'correlationId'>, d: AttemptDecision) {
  return {
    notificationId: row.id,
    channel: row.channel as Channel,
    deliveryCycle: row.deliveryCycle,
    status: d.kind === 'sent' ? ('Sent' as const) : ('Failed' as const),
    providerMessageId: d.kind === 'sent' ? d.providerMessageId : null,
    errorCode: d.kind === 'terminal' || d.kind === 'retry' ? d.code : null,
    correlationId: row.correlationId,
  };
}

/** Metrics and the terminal-failure log line of one recorded outcome. */
export function observeOutcome(deps: Pick<DeliveryDeps, 'metrics' | 'log'>, row: ClaimedRow, d: AttemptDecision, source: SendSource): void {
  if (d.kind !== 'sent' && d.kind !== 'retry' && d.kind !== 'terminal') return;
  deps.metrics.attempts.inc({ channel: row.channel, source, outcome: d.kind });
  if (d.kind === 'sent' && source === 'retry') deps.metrics.retrySent.inc({ channel: row.channel });
  if (endsCycle(d)) deps.metrics.dispatchedEvents.inc({ status: d.kind === 'sent' ? 'Sent' : 'Failed' });
  if (d.kind === 'terminal') {
    deps.metrics.terminalFailures.inc({ channel: row.channel, reason: d.reason, code: d.code });
    if (d.code === NTF.pushTokenInvalid && row.recipientAddress) deps.metrics.pushTokensDeleted.inc();
    deps.log.warn(
      { notificationId: row.id, channel: row.channel, code: d.code, reason: d.reason, attempts: d.attempts, deliveryCycle: row.deliveryCycle },
      'notification failed terminally; left for manual review (runbook terminal-failures)',
    );
  }
}

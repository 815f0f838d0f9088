import type { Db } from '../../../platform/db/index.ts';
import type { Logger } from '../../../platform/observability/index.ts';
import type { UserFrames } from '../../../platform/module.ts';
import type { Hub } from '../../../platform/realtime/index.ts';
import type { NotificationMetrics, SendSource } from '../metrics.ts';
import { NTF, type Channel } from '../model.ts';
import type { ProviderRegistry } from '../providers/registry.ts';
import { endsCycle, type AttemptDecision, type RetryPolicy } from './rules.ts';
import type { ClaimedRow, OutcomeWrite } from './sql.ts';
import type { StatusChange } from '../status-frames.ts';

/** What the dispatcher and the retry worker share: handles, not settings. */
export interface DeliveryDeps {
  db: Db;
  providers: ProviderRegistry;
  metrics: NotificationMetrics;
  /** The hub the in-app adapter pushes to. */
  hub: Hub;
  /** Where status frames go, in the outcome's transaction (status-frames.ts). */
  userFrames: UserFrames;
}

/** A claimed row with its channel's config as the batch read it (configs are loaded once per batch). */
export interface ClaimedNotification extends ClaimedRow {
  providerKey: string;
  policy: RetryPolicy;
}

/** The counts a delivery run reports besides the kernel's (batches, claimed, failed, released). */
export const DELIVERY_COUNTS = ['sent', 'retried', 'terminal', 'skipped', 'discarded', 'conflicts', 'unconfirmed'] as const;
export type DeliveryCount = (typeof DELIVERY_COUNTS)[number];

/** The count an applied outcome adds to. */
export const countOf = (kind: WritableDecision['kind']): DeliveryCount =>
  kind === 'retry' ? 'retried' : kind === 'unknown' ? 'unconfirmed' : kind;

/** The decisions that change the row. */
export type WritableDecision = Extract<AttemptDecision, { kind: 'sent' | 'retry' | 'terminal' | 'unknown' }>;

const errorCodeOf = (d: WritableDecision): string | null =>
  d.kind === 'sent' ? null : d.kind === 'unknown' ? NTF.outcomeUnknown : d.code;

export function writeOf(row: Pick<ClaimedRow, 'id'>, version: number, d: WritableDecision): OutcomeWrite {
  return {
    id: row.id,
    version,
    status: d.kind === 'sent' ? 'Sent' : 'Failed',
    attempts: d.attempts,
    terminal: d.kind === 'terminal',
    lastError: errorCodeOf(d),
    nextAttemptAt: d.kind === 'retry' ? d.nextAttemptAt.toISOString() : null,
    providerMessageId: d.kind === 'sent' ? d.providerMessageId : null,
    // An unknown outcome keeps the send intent: the row is not claimed again (intent.ts).
    keepIntent: d.kind === 'unknown',
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

/** The NotificationStatusChanged of an applied outcome; `version` is the row's after the write. */
export function statusChangeOf(
  row: Pick<ClaimedRow, 'id' | 'recipientUserId' | 'channel' | 'deliveryCycle' | 'readAt'>,
  d: WritableDecision,
  version: number,
): StatusChange {
  return {
    notificationId: row.id,
    recipientUserId: row.recipientUserId,
    channel: row.channel,
    status: d.kind === 'sent' ? 'Sent' : 'Failed',
    terminal: d.kind === 'terminal',
    deliveryCycle: row.deliveryCycle,
    errorCode: errorCodeOf(d),
    readAt: row.readAt,
    version,
  };
}

/** A terminal invalid-token outcome of a push: its device token is deleted with it. */
export const deadPushToken = (row: ClaimedRow, d: AttemptDecision): string | null =>
  d.kind === 'terminal' && d.code === NTF.pushTokenInvalid && row.recipientAddress ? row.recipientAddress : null;

/** Metrics and the terminal-failure log line of one recorded outcome. */
export function observeOutcome(metrics: NotificationMetrics, log: Logger, row: ClaimedRow, d: AttemptDecision, source: SendSource): void {
  if (d.kind !== 'sent' && d.kind !== 'retry' && d.kind !== 'terminal' && d.kind !== 'unknown') return;
  metrics.attempts.inc({ channel: row.channel, source, outcome: d.kind });
  if (d.kind === 'unknown') {
    metrics.outcomeUnknown.inc({ channel: row.channel });
    log.warn(
      { notificationId: row.id, channel: row.channel, deliveryCycle: row.deliveryCycle },
      'send outcome unknown (the server may have accepted the message); never resent: waits for a delivery webhook or an admin (runbook NotificationsEmailUnconfirmed)',
    );
  }
  if (d.kind === 'sent' && source === 'retry') metrics.retrySent.inc({ channel: row.channel });
  if (endsCycle(d)) metrics.dispatchedEvents.inc({ status: d.kind === 'sent' ? 'Sent' : 'Failed' });
  if (d.kind === 'terminal') {
    metrics.terminalFailures.inc({ channel: row.channel, reason: d.reason, code: d.code });
    if (deadPushToken(row, d)) metrics.pushTokensDeleted.inc();
    log.warn(
      { notificationId: row.id, channel: row.channel, code: d.code, reason: d.reason, attempts: d.attempts, deliveryCycle: row.deliveryCycle },
      'notification failed terminally; left for manual review (runbook terminal-failures)',
    );
  }
}

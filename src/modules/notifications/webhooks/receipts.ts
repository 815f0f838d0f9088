import type { Db } from '../../../platform/db/index.ts';
import type { Logger } from '../../../platform/observability/index.ts';
import { enqueue } from '../../../platform/outbox/index.ts';
import { dispatchedEvent } from '../events.ts';
import type { NotificationMetrics } from '../metrics.ts';
import { NTF, PROVIDERS_OF, type Channel } from '../model.ts';
import { idempotencyKeyOf } from '../delivery/rules.ts';
import { decideReceipt, type ReceiptDecision } from './receipt-rules.ts';
import { confirmDelivery, failByReceipt, lockForReceipt, markSentByReceipt, reopenInCycle } from './receipt-sql.ts';
import { rememberSignature, type ReplayMark } from './replay-sql.ts';
import { pushStatusChanges, type StatusChange } from '../status-push.ts';
import type { Hub } from '../../../platform/realtime/index.ts';

export interface DeliveryReceipt {
  notificationId: string;
  deliveryCycle?: number;
  outcome: 'delivered' | 'failed';
  providerMessageId?: string;
}

export type ReceiptResult =
  | 'confirmed'
  | 'marked_sent'
  | 'reopened'
  | 'terminal'
  | 'unknown_notification'
  | 'provider_mismatch'
  /** Its signature was applied before (here or on another replica): nothing changed. */
  | 'replayed'
  | Extract<ReceiptDecision, { kind: 'ignore' }>['reason'];

/**
 * Applies an authenticated delivery receipt in one transaction with its event: delivered confirms a
 * Sent row (or records Sent for a row whose acceptance was never committed, A4 — which resolves an
 * email's unconfirmed send intent, so it is never resent); failed reopens Sent
 * → Failed in a new DeliveryCycle, due at once, at most MaxReopens times, then terminal Failed (AC7).
 * The row is locked, so a worker's outcome racing this loses the version check and re-reads (A5).
 * The receipt's signature is remembered in the same transaction; one already remembered is a replay
 * and changes nothing, whichever replica applied it first.
 */
export async function applyReceipt(
  deps: { db: Db; metrics: NotificationMetrics; log: Logger; hub: Hub; maxReopens: number },
  providerKey: string,
  receipt: DeliveryReceipt,
  mark: ReplayMark,
  now: Date,
): Promise<ReceiptResult> {
  let channel: Channel | 'unknown' = 'unknown';
  /** What a Sent or terminal Failed receipt announces once committed. */
  let change: StatusChange | null = null;
  const result = await deps.db.transaction(async (tx): Promise<ReceiptResult> => {
    if (!(await rememberSignature(tx, providerKey, mark))) return 'replayed';
    const row = await lockForReceipt(tx, receipt.notificationId);
    if (!row) return 'unknown_notification';
    channel = row.channel;
    if (!PROVIDERS_OF[row.channel]?.includes(providerKey)) return 'provider_mismatch';
    const decision = decideReceipt(row, receipt, deps.maxReopens);
    const announce = (status: 'Sent' | 'Failed', errorCode: string | null) => {
      change = { notificationId: row.id, recipientUserId: row.recipientUserId, channel: row.channel, status, terminal: status === 'Failed', deliveryCycle: row.deliveryCycle, errorCode, readAt: row.readAt, version: row.version + 1 };
    };
    switch (decision.kind) {
      case 'ignore':
        return decision.reason;
      case 'confirm':
        await confirmDelivery(tx, row.id, now);
        return 'confirmed';
      case 'mark-sent': {
        const providerMessageId = (receipt.providerMessageId ?? row.providerMessageId ?? idempotencyKeyOf(row.id, row.deliveryCycle)).slice(0, 255);
        await markSentByReceipt(tx, row.id, providerMessageId, now);
        announce('Sent', null);
        await enqueue(
          tx,
          dispatchedEvent({ notificationId: row.id, channel: row.channel, deliveryCycle: row.deliveryCycle, status: 'Sent', providerMessageId, correlationId: row.correlationId }, now),
        );
        return 'marked_sent';
      }
      case 'reopen':
        // Attempts restart for the new cycle; its Idempotency-Key differs, so the provider sends again.
        await reopenInCycle(tx, row.id, decision.deliveryCycle, now);
        return 'reopened';
      case 'terminal':
        await failByReceipt(tx, row.id, now);
        announce('Failed', NTF.deliveryFailed);
        await enqueue(
          tx,
          dispatchedEvent(
            { notificationId: row.id, channel: row.channel, deliveryCycle: row.deliveryCycle, status: 'Failed', errorCode: NTF.deliveryFailed, correlationId: row.correlationId },
            now,
          ),
        );
        return 'terminal';
    }
  });
  if (change) await pushStatusChanges(deps.hub, deps.log, [change], now);
  deps.metrics.webhooks.inc({ provider: providerKey, result });
  if (result === 'marked_sent') deps.metrics.dispatchedEvents.inc({ status: 'Sent' });
  if (result === 'terminal') {
    deps.metrics.dispatchedEvents.inc({ status: 'Failed' });
    deps.metrics.terminalFailures.inc({ channel, reason: 'delivery_failed', code: NTF.deliveryFailed });
  }
  if (result === 'replayed') {
    deps.log.warn({ notificationId: receipt.notificationId, provider: providerKey }, 'delivery webhook refused: its signature was already applied (a replay, or the provider retrying a receipt we answered)');
  }
  if (result === 'reopened' || result === 'terminal') {
    deps.log.info({ notificationId: receipt.notificationId, provider: providerKey, result }, 'delivery webhook reported a failed delivery');
  }
  return result;
}

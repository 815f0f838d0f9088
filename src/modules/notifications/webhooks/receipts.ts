import type { Db } from '../../../platform/db/index.ts';
import type { UserFrames } from '../../../platform/module.ts';
import type { Logger } from '../../../platform/observability/index.ts';
import { enqueue } from '../../../platform/outbox/index.ts';
import { dispatchedEvent } from '../events.ts';
import type { NotificationMetrics } from '../metrics.ts';
import { NTF, PROVIDERS_OF, type Channel } from '../model.ts';
import { idempotencyKeyOf } from '../delivery/rules.ts';
import { decideReceipt, type ReceiptDecision } from './receipt-rules.ts';
import { confirmDelivery, failByReceipt, lockForReceipt, markSentByReceipt, reopenInCycle } from './receipt-sql.ts';
import { rememberSignature, type ReplayMark } from './replay-sql.ts';
import { recordStatusChanges } from '../status-frames.ts';

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
  deps: { db: Db; metrics: NotificationMetrics; log: Logger; maxReopens: number; userFrames: UserFrames },
  providerKey: string,
  receipt: DeliveryReceipt,
  mark: ReplayMark,
  now: Date,
): Promise<ReceiptResult> {
  let channel: Channel | 'unknown' = 'unknown';
  const result = await deps.db.transaction(async (tx): Promise<ReceiptResult> => {
    if (!(await rememberSignature(tx, providerKey, mark))) return 'replayed';
    const row = await lockForReceipt(tx, receipt.notificationId);
    if (!row) return 'unknown_notification';
    channel = row.channel;
    if (!PROVIDERS_OF[row.channel]?.includes(providerKey)) return 'provider_mismatch';
    const decision = decideReceipt(row, receipt, deps.maxReopens);
    // NotificationStatusChanged of the receipt's change, stored with it (the realtime outbox, status-frames.ts).
    const announce = (status: 'Sent' | 'Failed', o: { terminal: boolean; deliveryCycle: number; errorCode: string | null }) =>
      recordStatusChanges(
        deps.userFrames,
        tx,
        [{ notificationId: row.id, recipientUserId: row.recipientUserId, channel: row.channel, status, ...o, readAt: row.readAt, version: row.version + 1 }],
        now,
      );
    switch (decision.kind) {
      case 'ignore':
        return decision.reason;
      case 'confirm':
        await confirmDelivery(tx, row.id, now);
        return 'confirmed';
      case 'mark-sent': {
        const providerMessageId = (receipt.providerMessageId ?? row.providerMessageId ?? idempotencyKeyOf(row.id, row.deliveryCycle)).slice(0, 255);
        await markSentByReceipt(tx, row.id, providerMessageId, now);
        await announce('Sent', { terminal: false, deliveryCycle: row.deliveryCycle, errorCode: null });
        await enqueue(
          tx,
          dispatchedEvent({ notificationId: row.id, channel: row.channel, deliveryCycle: row.deliveryCycle, status: 'Sent', providerMessageId, correlationId: row.correlationId }, now),
        );
        return 'marked_sent';
      }
      case 'reopen':
        // Attempts restart for the new cycle; its Idempotency-Key differs, so the provider sends again.
        await reopenInCycle(tx, row.id, decision.deliveryCycle, now);
        await announce('Failed', { terminal: false, deliveryCycle: decision.deliveryCycle, errorCode: NTF.deliveryFailed });
        return 'reopened';
      case 'terminal':
        await failByReceipt(tx, row.id, now);
        await announce('Failed', { terminal: true, deliveryCycle: row.deliveryCycle, errorCode: NTF.deliveryFailed });
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

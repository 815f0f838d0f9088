import type { Status } from '../model.ts';

/**
 * What a provider's delivery receipt does to a notification, as plain functions over data.
 */

/** A provider's delivery receipt, matched to a notification by NotificationId. */
export interface Receipt {
  outcome: 'delivered' | 'failed';
  /** The cycle the receipt is about (from the Idempotency-Key / Message-ID we sent); unknown = current. */
  deliveryCycle?: number;
}

export interface ReceiptState {
  status: Status;
  terminal: boolean;
  deliveryCycle: number;
  deliveredAt: Date | null;
}

export type ReceiptDecision =
  /** Sent and now confirmed delivered. */
  | { kind: 'confirm' }
  /** Accepted by the provider but never recorded (worker died, A4): the receipt records Sent. */
  | { kind: 'mark-sent' }
  /** Sent, but the provider could not deliver: back to Failed in a new cycle, due at once (AC7). */
  | { kind: 'reopen'; deliveryCycle: number }
  /** Sent, could not be delivered, and MaxReopens cycles have run: terminal Failed for manual review. */
  | { kind: 'terminal' }
  | { kind: 'ignore'; reason: 'stale_cycle' | 'already_confirmed' | 'final' | 'not_sent' };

export function decideReceipt(state: ReceiptState, receipt: Receipt, maxReopens: number): ReceiptDecision {
  if (receipt.deliveryCycle !== undefined && receipt.deliveryCycle !== state.deliveryCycle) {
    return { kind: 'ignore', reason: 'stale_cycle' };
  }
  if (receipt.outcome === 'delivered') {
    if (state.status === 'Sent') return state.deliveredAt ? { kind: 'ignore', reason: 'already_confirmed' } : { kind: 'confirm' };
    return state.terminal ? { kind: 'ignore', reason: 'final' } : { kind: 'mark-sent' };
  }
  if (state.status !== 'Sent') return { kind: 'ignore', reason: state.terminal ? 'final' : 'not_sent' };
  const reopensSoFar = state.deliveryCycle - 1;
  return reopensSoFar < maxReopens ? { kind: 'reopen', deliveryCycle: state.deliveryCycle + 1 } : { kind: 'terminal' };
}

/** Reads `NotificationId:DeliveryCycle` back (webhooks echo our reference); null when it is not one. */
export function parseReference(reference: string): { notificationId: string; deliveryCycle?: number } | null {
  const m = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?::(\d{1,6}))?$/i.exec(reference.trim());
  if (!m) return null;
  return { notificationId: m[1]!.toLowerCase(), ...(m[2] ? { deliveryCycle: Number(m[2]) } : {}) };
}

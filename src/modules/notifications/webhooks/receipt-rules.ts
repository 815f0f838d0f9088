import type { Status } from '../model.ts';

/**
 * What a provider's delivery receipt does to a notification, as plain functions over data.
 */

/**
 * A provider's delivery receipt, matched to a notification by NotificationId, and to one of its
 * DeliveryCycles by the cycle it names (we send it with every message, in the body and the
 * Idempotency-Key / Message-ID) or, failing that, by the providerMessageId the provider gave that
 * cycle. A receipt that names neither is refused at the door (`namesItsCycle`): taking it as "the
 * current cycle" let a late failure of cycle N reopen cycle N+1.
 */
export interface Receipt {
  outcome: 'delivered' | 'failed';
  deliveryCycle?: number;
  providerMessageId?: string;
}

export const namesItsCycle = (r: Pick<Receipt, 'deliveryCycle' | 'providerMessageId'>): boolean =>
  r.deliveryCycle !== undefined || (r.providerMessageId !== undefined && r.providerMessageId !== '');

/**
 * Whether the receipt answers the row's current cycle. By providerMessageId only when the row holds
 * that id: a reopen clears it, so an older cycle's id never matches (nor does any id before the
 * cycle's acceptance was recorded — such a receipt must name its cycle).
 */
export function answersCurrentCycle(state: Pick<ReceiptState, 'deliveryCycle' | 'providerMessageId'>, r: Receipt): boolean {
  if (r.deliveryCycle !== undefined) return r.deliveryCycle === state.deliveryCycle;
  return r.providerMessageId !== undefined && r.providerMessageId !== '' && r.providerMessageId === state.providerMessageId;
}

export interface ReceiptState {
  status: Status;
  terminal: boolean;
  deliveryCycle: number;
  deliveredAt: Date | null;
  providerMessageId: string | null;
  /** The current send's outcome is unknown (delivery/intent.ts): a receipt is what settles it. */
  unconfirmed?: boolean;
}

export type ReceiptDecision =
  /** Sent and now confirmed delivered. */
  | { kind: 'confirm' }
  /** Accepted by the provider but never recorded (worker died, A4): the receipt records Sent. */
  | { kind: 'mark-sent' }
  /** Sent (or unconfirmed), but the provider could not deliver: back to Failed in a new cycle, due at once (AC7). */
  | { kind: 'reopen'; deliveryCycle: number }
  /** Sent, could not be delivered, and MaxReopens cycles have run: terminal Failed for manual review. */
  | { kind: 'terminal' }
  | { kind: 'ignore'; reason: 'stale_cycle' | 'already_confirmed' | 'final' | 'not_sent' };

export function decideReceipt(state: ReceiptState, receipt: Receipt, maxReopens: number): ReceiptDecision {
  if (!answersCurrentCycle(state, receipt)) return { kind: 'ignore', reason: 'stale_cycle' };
  if (receipt.outcome === 'delivered') {
    if (state.status === 'Sent') return state.deliveredAt ? { kind: 'ignore', reason: 'already_confirmed' } : { kind: 'confirm' };
    return state.terminal ? { kind: 'ignore', reason: 'final' } : { kind: 'mark-sent' };
  }
  if (state.status !== 'Sent' && !state.unconfirmed) return { kind: 'ignore', reason: state.terminal ? 'final' : 'not_sent' };
  const reopensSoFar = state.deliveryCycle - 1;
  return reopensSoFar < maxReopens ? { kind: 'reopen', deliveryCycle: state.deliveryCycle + 1 } : { kind: 'terminal' };
}

/** Reads `NotificationId:DeliveryCycle` back (webhooks echo our reference); null when it is not one. */
export function parseReference(reference: string): { notificationId: string; deliveryCycle?: number } | null {
  const m = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?::(\d{1,6}))?$/i.exec(reference.trim());
  if (!m) return null;
  return { notificationId: m[1]!.toLowerCase(), ...(m[2] ? { deliveryCycle: Number(m[2]) } : {}) };
}

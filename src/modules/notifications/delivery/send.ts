import type { Logger } from '../../../platform/observability/index.ts';
import { NTF } from '../model.ts';
import type { Delivery, SendResult } from '../providers/port.ts';
import type { ClaimedNotification, DeliveryDeps } from './outcomes.ts';
import { idempotencyKeyOf } from './rules.ts';
import { recordSendIntent, sendStillHeld, type ClaimedRow } from './sql.ts';
import type { Fence } from '../../../platform/jobs/index.ts';
import { NOTIFICATIONS_DEFAULTS } from '../defaults.ts';

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
  createdAt: row.createdAt,
  version: row.version,
});

/**
 * A send with no provider answer to record, cut off by the stop grace: the row goes back without
 * using an attempt (an email keeps its send intent, so its outcome is unknown, intent.ts).
 */
export type HeldSend = { held: 'stopped' };

/** What the send step of a delivery phase hands to its record step. */
export type SendAttempt = SendResult | HeldSend;

export const isHeld = (r: SendAttempt): r is HeldSend => 'held' in r;

/** Settles when `signal` aborts (never rejects), for racing an adapter that ignores its signal. */
const abortOf = (signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));

/**
 * Calls `send` with a signal that aborts `graceMs` after `stop` does: a stop starts no new send (the
 * kernel checks it between rows), and the sends in flight get a short grace before they are cut off.
 * A cut-off send is not the provider's failure, so it is `stopped` — not an attempt (a deploy must
 * never burn a notification's last attempt); its row goes back at once. An SMS or push the provider
 * had accepted is then resent with the same idempotency key and swallowed (A4); an email waits for
 * its send intent to resolve (intent.ts). `hardTimeoutMs` bounds an adapter that ignores its signal;
 * such a send answers `lost` (transient, or outcome unknown for a provider that cannot dedupe).
 */
async function sendWithin(
  stop: AbortSignal,
  graceMs: number,
  hardTimeoutMs: number,
  lost: SendResult,
  send: (signal: AbortSignal) => Promise<SendResult>,
): Promise<SendAttempt> {
  const cutOff = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const onStop = () => {
    timer = setTimeout(() => cutOff.abort(new Error('worker stopping')), graceMs).unref();
  };
  if (stop.aborted) onStop();
  else stop.addEventListener('abort', onStop, { once: true });
  const signal = AbortSignal.any([cutOff.signal, AbortSignal.timeout(hardTimeoutMs)]);
  try {
    const sending = send(signal);
    sending.catch(() => undefined); // an adapter that answers after the race was lost must not crash the process
    const result = await Promise.race([sending, abortOf(signal).then(() => null)]);
    if (result?.ok) return result;
    if (cutOff.signal.aborted) return { held: 'stopped' };
    return result ?? lost;
  } catch (err) {
    if (cutOff.signal.aborted) return { held: 'stopped' };
    throw err;
  } finally {
    stop.removeEventListener('abort', onStop);
    clearTimeout(timer);
  }
}

/**
 * Step 2 of both delivery jobs: one provider call, outside any transaction. For a provider that
 * cannot dedupe (SMTP) the send intent is recorded first, in its own statement (intent.ts); rows
 * with an unresolved intent are never claimed, so they never get here. Throws only when the intent
 * cannot be recorded (nothing was sent; the row keeps its lease). Otherwise: a channel whose
 * adapter cannot send answers NTF_PROVIDER_NOT_IMPLEMENTED (the row waits), an adapter that throws
 * or hangs past `hardTimeoutMs` (a safety net above the adapters' own timeouts) is
 * NTF_PROVIDER_TRANSIENT — or NTF_PROVIDER_OUTCOME_UNKNOWN once an intent was recorded, since the
 * message may be out — and a send the stop grace cut off is `stopped`.
 */
export async function sendNotification(
  deps: DeliveryDeps,
  row: ClaimedNotification,
  run: { signal: AbortSignal; log: Logger; jobRunId: string; now(): Date; fence?: Fence },
  opts: { hardTimeoutMs: number },
): Promise<SendAttempt> {
  const key = row.providerKey;
  const provider = deps.providers.get(key);
  if (!provider || deps.providers.state(key) !== 'available') return { ok: false, code: NTF.notImplemented };
  const delivery = deliveryOf(row);
  const messageId = provider.intentMessageId?.(delivery);
  if (messageId !== undefined) {
    const held = await recordSendIntent(deps.db, { id: row.id, leaseOwner: run.jobRunId, deliveryCycle: row.deliveryCycle, messageId, at: run.now() }, run.fence);
    if (!held) throw new Error('the lease on the notification was lost before its send; nothing was sent');
  } else if (run.fence && !(await sendStillHeld(deps.db, { id: row.id, leaseOwner: run.jobRunId, deliveryCycle: row.deliveryCycle }, run.fence))) {
    // A single-runner worker (retry) taken over while it ran: the new holder owns the rows now.
    throw new Error('the lease on the notification or on its worker was lost before its send; nothing was sent');
  }
  const lost: SendResult = { ok: false, code: messageId === undefined ? NTF.transient : NTF.outcomeUnknown };
  const end = deps.metrics.sendDuration.startTimer({ provider: key });
  try {
    return await sendWithin(run.signal, NOTIFICATIONS_DEFAULTS.sendStopGraceMs, opts.hardTimeoutMs, lost, (signal) => provider.send(delivery, signal));
  } catch (err) {
    run.log.warn({ err, notificationId: row.id, provider: key }, 'provider adapter threw; counted as transient (outcome unknown once a send intent was recorded)');
    return lost;
  } finally {
    end();
  }
}
